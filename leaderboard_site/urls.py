"""Root URLs: the v1 API, health, schema and docs, the admin and the player pages."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import health, metrics

api_v1 = [
    path("", include("scoring.urls")),
    path("", include("boards.urls")),
    path("", include("competitions.urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("health/live", health.live, name="health-live"),
    path("health/ready", health.ready, name="health-ready"),
    path("metrics", metrics.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("", include("boards.page_urls")),
    path("", include("competitions.page_urls")),
]
