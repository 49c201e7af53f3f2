# One image for the web server (gunicorn) and the Celery worker.
FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=veriharm_site.settings.production \
    VERIHARM_VAR_DIR=/var/lib/veriharm

# bubblewrap for the daemon-less sandbox backend; the docker backend talks to a mounted socket.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY . .
RUN DJANGO_SECRET_KEY=collectstatic-only-$(python -c 'import secrets; print(secrets.token_hex(32))') \
    python manage.py collectstatic --noinput -v0 \
 && useradd --system --home /var/lib/veriharm veriharm \
 && mkdir -p /var/lib/veriharm/imports && chown -R veriharm /var/lib/veriharm

USER veriharm
EXPOSE 8000
CMD ["gunicorn", "veriharm_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--access-logfile", "-"]
