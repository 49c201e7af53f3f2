from django.contrib.auth.models import AbstractUser


class User(AbstractUser):
    """A person who logs in. Roles are Django groups (veriharm_site.roles), not fields here."""
