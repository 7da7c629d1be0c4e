# engram service (and, from the same image, the operator). Multi-stage, non-root.
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY operator ./operator
RUN python -m venv /opt/engram \
 && /opt/engram/bin/pip install --upgrade pip \
 && /opt/engram/bin/pip install '.[operator]'

FROM python:3.11-slim-bookworm
RUN groupadd --system --gid 10001 engram \
 && useradd --system --uid 10001 --gid engram --no-create-home --shell /usr/sbin/nologin engram
COPY --from=build /opt/engram /opt/engram
ENV PATH=/opt/engram/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    ENGRAM_STATE_DIR=/tmp/engram
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["engram"]
CMD ["serve"]
