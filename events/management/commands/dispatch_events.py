from django.core.management.base import BaseCommand

from events.dispatcher import run_forever


class Command(BaseCommand):
    help = "The webhook dispatcher: POSTs due deliveries and records each try, until SIGTERM (events/dispatcher.py)."

    def handle(self, *args, **options):
        run_forever()
