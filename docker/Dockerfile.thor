# syntax=docker/dockerfile:1
# AI2-THOR image: the CPU image plus the `thor` extra and what the Unity player needs to render,
# an X server (Xvfb, Mesa GL) for the Linux64 platform or Vulkan for CloudRendering.
# Build the CPU image first, then from the repository root (docker/README.md):
#   docker build -f docker/Dockerfile.thor --build-arg BASE_IMAGE=rllib-synpo:cpu -t rllib-synpo:thor .
# The Unity player itself (about 0.5-0.8 GB) is downloaded by ai2thor at first use, or mounted
# under /home/synpo/.ai2thor/releases for offline machines.
ARG BASE_IMAGE=rllib-synpo:cpu
FROM ${BASE_IMAGE}

USER 0:0

# X: Xvfb with GLX, Mesa's GL and the X client libraries the Unity player loads.
# Vulkan (CloudRendering): the loader, Mesa's drivers (lavapipe on CPU) and vulkaninfo; on an
# NVIDIA GPU the container toolkit adds the driver's Vulkan ICD (graphics capability below).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        xvfb xauth \
        libgl1 libglx-mesa0 libgl1-mesa-dri libglu1-mesa \
        libx11-6 libxext6 libxrender1 libxcursor1 libxrandr2 libxinerama1 libxi6 libsm6 \
        libvulkan1 mesa-vulkan-drivers vulkan-tools \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -m 1777 /tmp/.X11-unix

COPY --chmod=0755 docker/thor-entrypoint.sh /usr/local/bin/synpo-thor-entrypoint

ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics \
    XVFB_DISPLAY=99 \
    XVFB_SCREEN=1024x768x24

USER 1000:1000

RUN python docker/package_requirements.py --extra thor --output thor-requirements.txt \
    && pip install --no-cache-dir -r thor-requirements.txt \
    && pip check

# Starts Xvfb when there is no DISPLAY and CloudRendering is not asked for, then runs rllib.
ENTRYPOINT ["synpo-thor-entrypoint", "rllib"]
CMD ["--help"]
