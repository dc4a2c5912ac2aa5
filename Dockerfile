# cybs-etl: the scheduler image. Build: docker build -t cybs-etl .
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY pipelines ./pipelines
COPY sql ./sql
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# See src/runtime-flags.ts (NODE_RUNTIME_ENV and NODE_RUNTIME_FLAGS).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json config.yaml ./
COPY sql ./sql
USER node
EXPOSE 9464
# --max-semi-space-size, --initial-old-space-size (and the flags the CLI sets itself): see src/runtime-flags.ts
ENTRYPOINT ["node", "--max-semi-space-size=4", "--initial-old-space-size=64", "dist/cli.mjs"]
CMD ["schedule"]
