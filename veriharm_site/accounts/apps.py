from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "veriharm_site.accounts"
    label = "accounts"
    verbose_name = "Accounts"
