# One image for every Cairn process: `cairn worker`, `cairn ingest`, `cairn stats`, … (the entrypoint is the CLI).
# The full bookworm image carries python3/g++ in case a native addon (better-sqlite3, usearch) has no
# prebuilt binary for the platform.
FROM node:20-bookworm AS build
RUN npm install -g pnpm@10.34.9
WORKDIR /app
COPY . .
RUN pnpm install --frozen-lockfile --reporter=append-only && pnpm build

FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
ENV CAIRN_DATA_DIR=/data NODE_ENV=production
VOLUME /data
ENTRYPOINT ["node", "/app/apps/cli/dist/main.js"]
CMD ["--help"]
