import os

from config.startup import pause_gc, resume_gc

pause_gc()  # start-up runs without the cyclic collector (config/startup.py)

from django.core.wsgi import get_wsgi_application  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Each web process, as it starts, removes uploads that a killed process left behind.
from jobs.uploads import sweep_uploads  # noqa: E402  (needs the settings set up above)

sweep_uploads()
resume_gc()
