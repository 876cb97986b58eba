"""The bottom layer: small helpers every app may use (error shape, bulk SQL, the Redis connection
and Lua loader, request signing, id formats, token buckets, admin mixins). It imports no app.
"""
