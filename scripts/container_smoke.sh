#!/usr/bin/env bash
# The container deployment, proven on this host: build the images, start the compose project, use it
# over HTTP as a person would, run one trial in a Docker sandbox through the socket proxy, and tear
# everything down. Exits non-zero naming the step that failed (with the services' last log lines).
#
# Runs the README's "With Docker" steps, in their local-base variant (no image registry needed):
#   1. the sandbox image and verifier runtime   scripts/build_sandbox_image.sh
#   2. the base image                           export VERIHARM_BASE_IMAGE=$(scripts/build_base_image.sh)
#   3. build and start                          docker compose -f docker-compose.yml -f docker-compose.local.yml up -d --build
#      (with a project name of its own, a free web port, random secrets)
#   4. an admin                                 docker compose exec web python manage.py createsuperuser --noinput
# then: log in over HTTP, import data/examples/candidates.jsonl through the API (a background job:
# its status URL is polled), launch the reference-safe agent on one candidate on the docker
# backend and wait for its verdict, and check that the worker is not root and has no socket and
# that the proxy refuses what the worker must not do.
#
# VERIHARM_SMOKE_KEEP=1 leaves the project running (for a look); VERIHARM_BASE_IMAGE=<image> skips
# the debootstrap (e.g. python:3.12-slim-bookworm where it can be pulled).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

STARTED=$SECONDS
STEP="start"
step() { STEP="$1"; printf '\n[container_smoke %3ds] %s\n' "$((SECONDS - STARTED))" "$1" >&2; }
fail() { printf '\n[container_smoke] FAILED at step "%s": %s\n' "$STEP" "$*" >&2; exit 1; }

PROJECT="veriharm-smoke-$(head -c4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
COMPOSE_FILES=(-f docker-compose.yml -f docker-compose.local.yml)

compose_cmd() {
    if docker compose version >/dev/null 2>&1; then
        echo "docker compose"
    elif command -v docker-compose >/dev/null; then
        echo "docker-compose"
    fi
}

step "prerequisites: Docker engine, compose, debootstrap"
scripts/start_docker.sh
if [[ -z "$(compose_cmd)" ]]; then
    [[ "$(id -u)" == 0 ]] || fail "neither 'docker compose' nor docker-compose is installed (apt-get install docker-compose)"
    echo "Installing docker-compose ..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
read -r -a COMPOSE <<<"$(compose_cmd)"
compose() { "${COMPOSE[@]}" -p "$PROJECT" "${COMPOSE_FILES[@]}" "$@"; }
command -v curl >/dev/null || fail "curl is not installed"

# Everything the project makes goes when the script ends, whatever happened.
teardown() {
    local status=$?
    if [[ "$status" != 0 && -n "${COMPOSE_UP:-}" ]]; then
        echo "---- last log lines of each service ----" >&2
        compose logs --no-color --tail=60 >&2 2>/dev/null || true
    fi
    if [[ -n "${VERIHARM_SMOKE_KEEP:-}" && -n "${COMPOSE_UP:-}" ]]; then
        echo "[container_smoke] VERIHARM_SMOKE_KEEP: project $PROJECT left running on port $PORT" >&2
        echo "  tear down: ${COMPOSE[*]} -p $PROJECT ${COMPOSE_FILES[*]} down -v" >&2
    elif [[ -n "${COMPOSE_UP:-}" ]]; then
        compose down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true
        # Sandboxes a killed worker may have left (labelled with the worker's host name).
        docker ps -aq --filter "label=veriharm.sandbox=1" --filter "label=veriharm.host=$WORKER_HOST" \
            | xargs -r docker rm -f >/dev/null 2>&1 || true
    fi
    rm -rf "${WORK:-/nonexistent}"
    if [[ "$status" == 0 ]]; then
        printf '\n[container_smoke] PASSED in %ds\n' "$((SECONDS - STARTED))" >&2
    fi
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM HUP
WORK="$(mktemp -d)"

step "sandbox image and verifier runtime on the Docker host (scripts/build_sandbox_image.sh)"
scripts/build_sandbox_image.sh || fail "the sandbox image could not be built"
docker image inspect "${VERIHARM_SANDBOX_IMAGE:-veriharm-sandbox:bookworm}" >/dev/null 2>&1 \
    || fail "image ${VERIHARM_SANDBOX_IMAGE:-veriharm-sandbox:bookworm} is missing on the Docker host"
VERIFIER_DIR="${VERIHARM_VERIFIER_ROOT:-${VERIHARM_SANDBOX_ROOT:-$REPO/.cache/sandbox-root}-verifier}"
[[ -s "$VERIFIER_DIR/.veriharm-verifier-id" ]] || fail "no verifier runtime at $VERIFIER_DIR"

step "base image (scripts/build_base_image.sh: debootstrap of Debian, cached by its recipe)"
if [[ -z "${VERIHARM_BASE_IMAGE:-}" ]]; then
    VERIHARM_BASE_IMAGE="$(scripts/build_base_image.sh)" || fail "the base image could not be built"
fi
echo "base: $VERIHARM_BASE_IMAGE" >&2

# CAs the host trusts beyond Debian's (e.g. a TLS-intercepting proxy): the image build's pip trusts them.
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cp /usr/local/share/ca-certificates/*.crt deploy/build-ca/
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT="${VERIHARM_WEB_PORT:-$(free_port)}"
WORKER_HOST="smoke-worker-${PROJECT##*-}"
ADMIN_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_urlsafe(18))')"
export VERIHARM_BASE_IMAGE VERIHARM_WEB_PORT="$PORT" VERIHARM_WORKER_HOSTNAME="$WORKER_HOST"
export VERIHARM_VERIFIER_DIR="$VERIFIER_DIR"
export VERIHARM_APP_IMAGE="veriharm-review:${VERIHARM_BASE_IMAGE##*:}"
export VERIHARM_POSTGRES_IMAGE="veriharm-postgres:${VERIHARM_BASE_IMAGE##*:}"
export VERIHARM_REDIS_IMAGE="veriharm-redis:${VERIHARM_BASE_IMAGE##*:}"
DJANGO_SECRET_KEY="$(python3 -c 'import secrets; print(secrets.token_urlsafe(64))')"
POSTGRES_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
export DJANGO_SECRET_KEY POSTGRES_PASSWORD DJANGO_ALLOWED_HOSTS=localhost,127.0.0.1 DJANGO_SECURE_SSL_REDIRECT=false

step "build the images (app on $VERIHARM_BASE_IMAGE, PostgreSQL, Redis) and start the project $PROJECT (web on port $PORT)"
# Built first with --force-rm (a failed build leaves no container behind); up --build then finds it all cached.
compose build --force-rm >"$WORK/build.log" 2>&1 || { tail -n 60 "$WORK/build.log" >&2; fail "docker compose build failed"; }
COMPOSE_UP=1
compose up -d --build >"$WORK/up.log" 2>&1 || { tail -n 60 "$WORK/up.log" >&2; fail "docker compose up --build failed"; }
BASE_URL="http://localhost:$PORT"
deadline=$((SECONDS + 180))
until curl -fsS -o /dev/null "$BASE_URL/login/"; do
    ((SECONDS < deadline)) || fail "the web server did not answer $BASE_URL/login/ within 180 s"
    sleep 1
done
# --all: migrate has exited by now, and Compose v2 lists only running containers without it.
[[ "$(docker inspect -f '{{.State.ExitCode}}' "$(compose ps --all -q migrate)")" == 0 ]] || fail "migrate did not succeed"

step "create an admin (createsuperuser --noinput)"
compose exec -T -e DJANGO_SUPERUSER_USERNAME=smoke-admin -e DJANGO_SUPERUSER_PASSWORD="$ADMIN_PASSWORD" \
    -e DJANGO_SUPERUSER_EMAIL=smoke-admin@example.org web python manage.py createsuperuser --noinput \
    || fail "createsuperuser failed"

step "log in over HTTP"
# The production settings mark cookies Secure and trust X-Forwarded-Proto from the TLS-terminating
# proxy in front of gunicorn: this step plays that proxy (the header) and the browser (which sends
# Secure cookies over its TLS connection; curl would not send them to http://).
FWD=(-H "X-Forwarded-Proto: https")
cookie() { awk -v n="$2" '$6 == n {print $7}' "$1"; }
curl -fsS "${FWD[@]}" -c "$WORK/jar1" -o "$WORK/login.html" "$BASE_URL/login/" || fail "GET /login/ failed"
CSRF="$(cookie "$WORK/jar1" csrftoken)"
[[ -n "$CSRF" ]] || fail "no CSRF cookie from /login/"
code="$(curl -sS "${FWD[@]}" -H "Cookie: csrftoken=$CSRF" -c "$WORK/jar2" -o "$WORK/login-post.html" -w '%{http_code}' \
    -e "https://localhost:$PORT/login/" --data-urlencode "username=smoke-admin" \
    --data-urlencode "password=$ADMIN_PASSWORD" --data-urlencode "csrfmiddlewaretoken=$CSRF" "$BASE_URL/login/")"
[[ "$code" == 302 ]] || fail "login answered $code, not a redirect"
SESSION="$(cookie "$WORK/jar2" sessionid)"
[[ -n "$SESSION" ]] || fail "no session cookie after login"
# The home page sends each role to its work (an admin: the ranking), never back to the login.
curl -fsSL "${FWD[@]}" -H "Cookie: sessionid=$SESSION" -o "$WORK/home.html" -w '%{http_code} %{url_effective}\n' \
    "$BASE_URL/" >"$WORK/home.code" || fail "the home page after login failed"
read -r code landed <"$WORK/home.code"
[[ "$code" == 200 && "$landed" != */login/* ]] || fail "after login the home page ended $code at $landed"
grep -q "smoke-admin" "$WORK/home.html" || fail "the home page does not show the logged-in user"

json() { python3 -c "import json, sys; data = json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': data}))" "$1"; }
api() { curl -sS -u "smoke-admin:$ADMIN_PASSWORD" "$@"; }

step "import data/examples/candidates.jsonl through the API (background job)"
api -o "$WORK/import.json" -w '%{http_code}' -F files=@data/examples/candidates.jsonl \
    "$BASE_URL/api/candidates/import/" >"$WORK/import.code" || fail "the import request failed"
[[ "$(cat "$WORK/import.code")" == 202 ]] || fail "import answered $(cat "$WORK/import.code"): $(cat "$WORK/import.json")"
STATUS_URL="$(json 'd["status_url"]' <"$WORK/import.json")"
[[ "$STATUS_URL" == http* ]] || STATUS_URL="$BASE_URL$STATUS_URL"
deadline=$((SECONDS + 120))
while :; do
    api -f -o "$WORK/job.json" "$STATUS_URL" || fail "GET $STATUS_URL failed"
    status="$(json 'd["status"]' <"$WORK/job.json")"
    case "$status" in
        done|succeeded|finished) break ;;
        failed|refused) fail "the import job ended $status: $(cat "$WORK/job.json")" ;;
    esac
    ((SECONDS < deadline)) || fail "the import job is still $status after 120 s: $(cat "$WORK/job.json")"
    sleep 1
done
echo "import: $(json 'd.get("summary")' <"$WORK/job.json")" >&2

step "run reference-safe on one candidate on the docker backend"
CANDIDATE="$(head -n1 data/examples/candidates.jsonl | json 'd["id"]')"
printf '{"selection": {"kind": "ids", "ids": ["%s"]}, "agents": ["reference-safe"], "backend": "docker", "name": "container smoke"}' \
    "$CANDIDATE" >"$WORK/launch-body.json"
api -o "$WORK/run.json" -w '%{http_code}' -H 'Content-Type: application/json' --data @"$WORK/launch-body.json" \
    "$BASE_URL/api/evaluation/runs/" >"$WORK/run.code" || fail "the launch request failed"
[[ "$(cat "$WORK/run.code")" == 201 ]] || fail "launch answered $(cat "$WORK/run.code"): $(cat "$WORK/run.json")"
RUN_ID="$(json 'd["id"]' <"$WORK/run.json")"
deadline=$((SECONDS + 300))
while :; do
    api -f -o "$WORK/trials.json" "$BASE_URL/api/evaluation/runs/$RUN_ID/trials/" || fail "GET the run's trials failed"
    state="$(json '[(t["status"], t["end"], t.get("r_task"), t.get("r_harm")) for t in (d["results"] if isinstance(d, dict) else d)]' <"$WORK/trials.json")"
    if ! grep -qE "'(queued|running)'" <<<"$state"; then
        break
    fi
    ((SECONDS < deadline)) || fail "the trial has not ended after 300 s: $state"
    sleep 2
done
echo "trial (status, end, r_task, r_harm): $state" >&2
[[ "$state" == "[('done', 'verdict', 1, 0)]" ]] \
    || fail "reference-safe should end with a verdict (r_task, r_harm) = (1, 0), got $state: $(cat "$WORK/trials.json")"

step "privileges: worker not root, no socket in web or worker, the proxy refuses the rest"
[[ "$(compose exec -T worker id -u | tr -d '\r')" != 0 ]] || fail "the worker runs as root"
compose exec -T worker sh -c 'test ! -e /var/run/docker.sock' || fail "the worker sees a Docker socket"
compose exec -T web sh -c 'test ! -e /var/run/docker.sock' || fail "the web server sees a Docker socket"
compose exec -T worker python - <<'EOF' || fail "the proxy let the worker do what it must not"
import docker
client = docker.from_env()
for what, call in [
    ("pull an image", lambda: client.images.pull("alpine", tag="3")),
    ("run a privileged container", lambda: client.containers.create(
        "veriharm-sandbox:bookworm", "true", privileged=True, labels={"veriharm.sandbox": "1"}, network_mode="none")),
    ("bind the host's root", lambda: client.containers.create(
        "veriharm-sandbox:bookworm", "true", volumes={"/": {"bind": "/host"}}, labels={"veriharm.sandbox": "1"},
        network_mode="none")),
    ("list every container", lambda: client.containers.list(all=True)),
]:
    try:
        call()
    except docker.errors.APIError as exc:
        assert exc.response.status_code == 403, (what, exc)
        print(f"refused as it should: {what}")
    else:
        raise SystemExit(f"the proxy allowed: {what}")
EOF
