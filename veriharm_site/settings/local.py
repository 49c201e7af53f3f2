"""Development: the embedded default, debug on, a fixed non-secret key."""
from .base import *  # noqa: F401,F403
from .base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="insecure-development-key-do-not-use-in-production")
