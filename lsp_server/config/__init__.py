"""Configuration: the settings, where they come from, and who may decide what.

- `schema`: the settings as typed, defaulted records, the built-in backends and presets;
- `layers`: one source of settings each (the user's file, a workspace's, the editor's settings);
- `convert`: the one converter, plain dicts in, a `Config` out, each bad key reported;
- `trust`: what an untrusted layer (a workspace file, editor settings a repository can fill) may not set;
- `load`: the layers stacked into one config, the API key read from its environment variable.
"""
