"""The vocabulary the config layer and the renderers share: input checks, node labels and taints, and the
few facts both must agree on. It imports neither: config -> vocab <- render, so a value the stack file
accepts is one every renderer accepts, defined once."""
