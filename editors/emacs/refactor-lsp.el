;;; refactor-lsp.el --- refactor-lsp with eglot  -*- lexical-binding: t -*-

;; Load it from your init file, e.g.
;;
;;   (setq refactor-lsp-modes '(python-mode python-ts-mode))   ; optional, before loading
;;   (load "/path/to/refactor-lsp/editors/emacs/refactor-lsp.el")
;;
;; or copy the forms below into your init file.  Then `M-x eglot' in a buffer of one of those
;; modes, write a `# refactor-lsp: <instruction>' comment inside a function, and run
;; `M-x eglot-code-actions' there.  Tested with Emacs 28.2 + eglot 1.9 (tests/test_emacs_eglot.py).
;;
;; Eglot runs one language server per major mode and project: the modes listed here get
;; refactor-lsp instead of the server eglot would otherwise start for them.

(require 'eglot)

(defvar refactor-lsp-command '("refactor-lsp")
  "The server command and its arguments.")

(defvar refactor-lsp-modes '(python-mode python-ts-mode)
  "Major modes whose buffers eglot connects to refactor-lsp.")

(defvar refactor-lsp-settings nil
  "refactor-lsp settings, a plist sent as initializationOptions `(:refactorLsp SETTINGS)'.
For example (:defaultBackend \"openai\").  Per project, set `eglot-workspace-configuration'
in .dir-locals.el instead: ((nil . ((eglot-workspace-configuration
                                      . (:refactorLsp (:defaultBackend \"openai\"))))))")

(add-to-list 'eglot-server-programs
             `(,refactor-lsp-modes
               . (,@refactor-lsp-command
                  ,@(when refactor-lsp-settings
                      `(:initializationOptions (:refactorLsp ,refactor-lsp-settings))))))

;; Eglot asks "Server wants to edit ... Proceed?" before applying a server's edit; a refactor is
;; an edit you asked for (and undo reverts it).  Remove this line to keep the question.
(setq eglot-confirm-server-initiated-edits nil)

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
