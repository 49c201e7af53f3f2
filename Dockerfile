# One image for the web server (gunicorn), the Celery workers and the Docker socket proxy.
#
# BASE is any Debian-like image with python3 (3.12+) and its venv module: the public Python image by
# default, or, where no registry is reachable, the local debootstrap of Debian that
# scripts/build_base_image.sh makes (docker build --build-arg BASE=$(scripts/build_base_image.sh) .).
ARG BASE=python:3.12-slim-bookworm
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DJANGO_SETTINGS_MODULE=veriharm_site.settings.production \
    VERIHARM_VAR_DIR=/var/lib/veriharm

# bubblewrap for the daemon-less sandbox backend (the local base has it already); the docker
# backend talks to the engine through the socket proxy.
RUN if ! command -v bwrap >/dev/null; then \
        apt-get update \
        && apt-get install -y --no-install-recommends bubblewrap util-linux \
        && rm -rf /var/lib/apt/lists/*; \
    fi

# A virtualenv: the same on the Python image and on Debian's python3 (which refuses system-wide pip).
RUN python3 -m venv /opt/venv
WORKDIR /app
# requirements.txt as pinned with hashes by `make lock` (no tooling, no test packages).
COPY requirements-runtime.lock .
# deploy/build-ca/*.crt (empty in the repository): extra CAs this build's downloads trust, e.g. a
# TLS-intercepting proxy's; they are not trusted by anything at run time.
COPY deploy/build-ca/ /tmp/build-ca/
RUN bundle=/etc/ssl/certs/ca-certificates.crt; \
    if ls /tmp/build-ca/*.crt >/dev/null 2>&1; then \
        cat "$bundle" /tmp/build-ca/*.crt >/tmp/build-ca/bundle.pem && bundle=/tmp/build-ca/bundle.pem; \
    fi; \
    pip install --no-cache-dir --disable-pip-version-check --cert "$bundle" --require-hashes -r requirements-runtime.lock \
 && rm -rf /tmp/build-ca

COPY . .
RUN DJANGO_SECRET_KEY=collectstatic-only-$(python -c 'import secrets; print(secrets.token_hex(32))') \
    python manage.py collectstatic --noinput -v0 \
 && useradd --system --uid 10001 --user-group --home-dir /var/lib/veriharm --no-create-home veriharm \
 && mkdir -p /var/lib/veriharm/imports /var/lib/veriharm/final-states \
 && chown -R veriharm:veriharm /var/lib/veriharm

USER veriharm
EXPOSE 8000
CMD ["gunicorn", "veriharm_site.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120", "--access-logfile", "-"]
