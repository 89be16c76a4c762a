# dro container image: a wheel built in one stage, installed into a slim runtime as non-root.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY reconciler ./reconciler
COPY schemas ./schemas
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin dro
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENV DRO_STATE_DIR=/var/lib/dro HOME=/tmp
RUN mkdir -p /var/lib/dro && chown dro /var/lib/dro
USER 10001
VOLUME ["/var/lib/dro"]
ENTRYPOINT ["dro"]
CMD ["--help"]
