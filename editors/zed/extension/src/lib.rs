//! Zed needs an extension to start a language server it does not know. This one starts
//! `refactor-lsp` from PATH (or `lsp.refactor-lsp.binary.path`) and passes the user's
//! `lsp.refactor-lsp.initialization_options` and `lsp.refactor-lsp.settings` through.

use zed_extension_api::{self as zed, serde_json, settings::LspSettings, LanguageServerId, Result, Worktree};

struct RefactorLspExtension;

impl zed::Extension for RefactorLspExtension {
    fn new() -> Self {
        RefactorLspExtension
    }

    fn language_server_command(&mut self, id: &LanguageServerId, worktree: &Worktree) -> Result<zed::Command> {
        let binary = LspSettings::for_worktree(id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.binary);
        let command = binary
            .as_ref()
            .and_then(|binary| binary.path.clone())
            .or_else(|| worktree.which("refactor-lsp"))
            .ok_or_else(|| {
                "refactor-lsp is not on PATH: install it, or set lsp.refactor-lsp.binary.path".to_string()
            })?;
        let args = binary.and_then(|binary| binary.arguments).unwrap_or_default();
        Ok(zed::Command {
            command,
            args,
            env: worktree.shell_env(),
        })
    }

    fn language_server_initialization_options(
        &mut self,
        id: &LanguageServerId,
        worktree: &Worktree,
    ) -> Result<Option<serde_json::Value>> {
        Ok(LspSettings::for_worktree(id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.initialization_options))
    }

    fn language_server_workspace_configuration(
        &mut self,
        id: &LanguageServerId,
        worktree: &Worktree,
    ) -> Result<Option<serde_json::Value>> {
        Ok(LspSettings::for_worktree(id.as_ref(), worktree)
            .ok()
            .and_then(|settings| settings.settings))
    }
}

zed::register_extension!(RefactorLspExtension);
