# engram service and, from the same image, the operator (`python -m engram_operator`).
# Multi-stage: build tools and pip stay in the first stage; the runtime runs as uid 10001.
FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY service ./service
COPY operator ./operator
RUN python -m venv /opt/engram \
 && /opt/engram/bin/pip install '.[operator]' \
 && rm -rf /opt/engram/lib/python3.11/site-packages/pip /opt/engram/bin/pip*

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="engram" \
      org.opencontainers.image.description="Long-term memory for LLM agents over MCP, and its Kubernetes operator" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 engram \
 && useradd --system --uid 10001 --gid engram --no-create-home --shell /usr/sbin/nologin engram
COPY --from=build /opt/engram /opt/engram
# HOME and the state dir on /tmp: the root filesystem is read-only on Kubernetes.
# litellm must not fetch its model price list at import time (egress may be closed).
ENV PATH=/opt/engram/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8080 \
    ENGRAM_STATE_DIR=/tmp/engram
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["engram"]
CMD ["serve"]
