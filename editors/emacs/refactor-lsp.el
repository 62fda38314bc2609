;;; refactor-lsp.el --- refactor-lsp with eglot  -*- lexical-binding: t -*-

;; Load it from your init file, e.g.
;;
;;   (setq refactor-lsp-modes '(python-mode python-ts-mode))   ; optional, before loading
;;   (load "/path/to/refactor-lsp/editors/emacs/refactor-lsp.el")
;;
;; or copy the forms below into your init file.  Then `M-x eglot' in a buffer of one of those
;; modes, write a `# refactor-lsp: <instruction>' comment inside a function, and run
;; `M-x eglot-code-actions' there.  Tested with Emacs 28.2 + eglot 1.9 (tests/editors/test_emacs_eglot.py).
;;
;; Eglot runs one language server per major mode and project: the modes listed here get
;; refactor-lsp instead of the server eglot would otherwise start for them.
;;
;; Eglot starts the server in the project's folder: keep `refactor-lsp-command' an installed
;; program (`refactor-lsp', or its absolute path), not `python -m lsp_server', which would import a
;; repository's own `lsp_server/' package from there.
;;
;; Backends (where your code and API keys are sent) belong in `refactor-lsp-settings', which
;; eglot sends as initializationOptions, or in ~/.config/refactor-lsp/config.toml: both are yours
;; alone.  A repository's .dir-locals.el can set `eglot-workspace-configuration' (eglot marks it
;; safe), so unless you trust the folder the server takes from it only what neither routes
;; code or keys nor raises a refactor's cost (see the docstring of `refactor-lsp-settings').

(require 'eglot)

(defvar refactor-lsp-command '("refactor-lsp")
  "The server command and its arguments.")

(defvar refactor-lsp-modes '(python-mode python-ts-mode)
  "Major modes whose buffers eglot connects to refactor-lsp.")

(defvar refactor-lsp-settings nil
  "refactor-lsp settings, a plist sent as initializationOptions `(:refactorLsp SETTINGS)'.
Put your backends here (or in ~/.config/refactor-lsp/config.toml), with everything that decides
where your code and keys go: `baseUrl', `apiKeyEnv', `headers', `type', `verifyTls',
`metricsUrl', `fallback'.  For example:
  (:defaultBackend \"mine\"
   :backends (:mine (:type \"vllm\" :baseUrl \"http://127.0.0.1:8000/v1\" :model \"local\")))

Per project, `eglot-workspace-configuration' in a .dir-locals.el may set only what neither
routes code or keys nor raises a refactor's cost: `refactor' settings (its limits `maxTokens',
`contextChars', `maxRegionChars', `maxFileChars', `maxRetries', `concurrency' no higher than
yours; with your `maxTokens' 0, automatic, at most 256), `actions' added to yours (never one
with the id of a built-in or of yours, never `removesCode'), a backend's `model' or `prediction'
only as yours (or `prediction' \"never\"), and `defaultBackend' among YOUR backends, e.g.
  ((nil . ((eglot-workspace-configuration
            . (:refactorLsp (:defaultBackend \"mine\" :refactor (:scope \"block\")))))))
Eglot marks that variable safe, so any repository you open can set it: refactor-lsp ignores
the rest of what it sets (and says so) unless you trust the folder, with
trusted_workspaces = [\"/path/to/folder\"] in ~/.config/refactor-lsp/config.toml.")

(defclass refactor-lsp-server (eglot-lsp-server) ()
  :documentation "refactor-lsp, whose edits are the refactors you asked for.")

(add-to-list 'eglot-server-programs
             `(,refactor-lsp-modes
               . (refactor-lsp-server
                  ,@refactor-lsp-command
                  ,@(when refactor-lsp-settings
                      `(:initializationOptions (:refactorLsp ,refactor-lsp-settings))))))

;; Eglot asks "Server wants to edit ... Proceed?" before applying a server's edit; a refactor is
;; an edit you asked for (and undo reverts it), so refactor-lsp's are applied without the
;; question.  Every other server keeps your setting.  Remove this form to keep the question.
(cl-defmethod eglot-handle-request :around
  ((_server refactor-lsp-server) (_method (eql workspace/applyEdit)) &rest _)
  (let ((eglot-confirm-server-initiated-edits nil))  ; `eglot-confirm-server-edits' in eglot 1.16+
    (cl-call-next-method)))

;; Commands the code-action menu does not offer.
(defun refactor-lsp--execute (command)
  (let ((server (or (eglot-current-server) (user-error "No eglot server in this buffer"))))
    (jsonrpc-request server :workspace/executeCommand `(:command ,command :arguments []))))

(defun refactor-lsp-cancel ()
  "Cancel the refactors refactor-lsp is running."
  (interactive)
  (refactor-lsp--execute "refactorLsp.cancel"))

(defun refactor-lsp-show-stats ()
  "Show the median speed of past refactors, per backend, with and without prediction."
  (interactive)
  (refactor-lsp--execute "refactorLsp.showStats"))

;;; refactor-lsp.el ends here
