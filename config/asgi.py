import os

from config.startup import pause_gc, resume_gc

pause_gc()  # start-up runs without the cyclic collector (config/startup.py)

from django.core.asgi import get_asgi_application  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_asgi_application()
resume_gc()
