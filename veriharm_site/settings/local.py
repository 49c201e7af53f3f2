"""Development and the demo (`make run`): the embedded default, a fixed non-secret key.

DEBUG is off unless DJANGO_DEBUG=1: the demo is what a new user sees, and with DEBUG on Django
answers a missing page with its technical page (every URL pattern) and an error with a traceback
instead of the site's own 404 and 500 pages. Static files are served by WhiteNoise either way.
"""

from .base import *  # noqa: F401,F403
from .base import env

DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="insecure-development-key-do-not-use-in-production")
