# syntax=docker/dockerfile:1
# The base image for boxed agents: the environment the sister design gives every project (mise,
# git, Node 22 and the two agent CLIs at the versions Capsid's tests pin), so every project's
# box starts from the same tools. `capsid drive --box` runs the CLI in bubblewrap inside it.
#
#   docker build -f docker/agent-box.Dockerfile -t capsid-agent-box .
#
# The versions below are the ones scripts/test.sh installs (a test keeps them equal).

FROM debian:bookworm-slim
ARG NODE_MAJOR=22
ARG CLAUDE_CODE_VERSION=2.1.332
ARG CODEX_VERSION=0.171.0
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap ca-certificates curl git tmux xz-utils \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL "https://deb.nodesource.com/setup_${NODE_MAJOR}.x" | bash - \
 && apt-get install -y --no-install-recommends nodejs \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL https://mise.run | MISE_INSTALL_PATH=/usr/local/bin/mise sh
RUN npm install -g "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" "@openai/codex@${CODEX_VERSION}" \
 && npm cache clean --force
RUN useradd --create-home --uid 10002 --shell /bin/bash agent
COPY --from=capsid /usr/local/bin/capsid /usr/local/bin/capsid
USER agent
WORKDIR /home/agent
