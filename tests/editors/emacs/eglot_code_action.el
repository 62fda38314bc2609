;;; eglot_code_action.el --- drive Emacs + eglot as a user would  -*- lexical-binding: t -*-

;; Open a file, put point somewhere, run `M-x eglot-code-actions', pick an action from eglot's
;; menu, and wait for the server's edit and message.
;;
;; Run by tests/editors/test_emacs_eglot.py as `emacs --batch -Q -l this.el' with $RLSP_SPEC naming a JSON
;; file: {snippet, file, line, col, command, settings, pick, results, timeout_s, wait_for_message,
;; show_stats}.
;; Writes {menu, picked, text, modified, messages, events, error, confirm} as JSON to spec.results.
;; Eglot's menu is `completing-read': it is answered with spec.pick, the way a user types or
;; selects it, after recording what was offered.

(require 'json)
(unless (require 'eglot nil t)  ; built in since Emacs 29; Debian's elpa-eglot for Emacs 28
  (require 'package)
  (add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
  (package-initialize)
  (require 'eglot))

(defvar rlsp-spec
  (with-temp-buffer
    (insert-file-contents (getenv "RLSP_SPEC"))
    (json-parse-buffer :object-type 'plist :array-type 'array
                       :null-object nil :false-object :json-false)))

(defvar rlsp-result (list :menu [] :picked "" :text "" :modified :json-false
                          :messages [] :events "" :error "" :confirm ""))
(defvar rlsp-messages nil "Messages shown in the echo area, oldest first.")

(defun rlsp-get (key) (plist-get rlsp-spec key))

(defun rlsp-record-message (format-string &rest args)
  (when format-string
    (setq rlsp-messages
          (append rlsp-messages (list (apply #'format-message format-string args))))))
(advice-add 'message :before #'rlsp-record-message)

(defun rlsp-menu (orig prompt collection &rest rest)
  "Record the actions eglot offers, and answer with the one the spec picks."
  (if (not (string-prefix-p "[eglot] Pick an action" prompt))
      (apply orig prompt collection rest)
    (let ((titles (mapcar #'car collection)))
      (plist-put rlsp-result :menu (vconcat titles))
      (if (member (rlsp-get :pick) titles)
          (progn (plist-put rlsp-result :picked (rlsp-get :pick)) (rlsp-get :pick))
        (error "The menu has no %s" (rlsp-get :pick))))))
(advice-add 'completing-read :around #'rlsp-menu)

(defun rlsp-wait (done what)
  (let ((deadline (+ (float-time) (rlsp-get :timeout_s))))
    (while (not (funcall done))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.02))))

(defun rlsp-message-seen ()
  (cl-some (lambda (m) (string-match-p (regexp-quote (rlsp-get :wait_for_message)) m))
           rlsp-messages))

;; The configuration a user writes: editors/emacs/refactor-lsp.el with its variables set first.
(defvar refactor-lsp-command)
(defvar refactor-lsp-modes)
(defvar refactor-lsp-settings)
(setq refactor-lsp-command (append (rlsp-get :command) nil)
      refactor-lsp-modes '(python-mode)
      refactor-lsp-settings (rlsp-get :settings))
(load (rlsp-get :snippet) nil t)
;; What the setup leaves for every other server: the user's own setting (eglot's default here).
(plist-put rlsp-result :confirm (format "%S" (default-value 'eglot-confirm-server-initiated-edits)))

(let ((buffer nil))
  (condition-case err
      (progn
        (setq buffer (find-file (rlsp-get :file)))
        (let ((before (buffer-string)))
          (call-interactively #'eglot)  ; M-x eglot
          (rlsp-wait (lambda () (eglot-current-server)) "eglot to connect")
          (goto-char (point-min))
          (forward-line (1- (rlsp-get :line)))
          (move-to-column (1- (rlsp-get :col)))
          ;; As after `M-x eglot-code-actions RET' (a keyboard event, so eglot asks in the minibuffer).
          (let ((last-nonmenu-event ?\r))
            (call-interactively #'eglot-code-actions))
          (rlsp-wait (lambda () (not (equal (buffer-string) before))) "the edit")
          (when (rlsp-get :wait_for_message)
            (rlsp-wait #'rlsp-message-seen "the message"))
          (when (rlsp-get :show_stats)
            (call-interactively #'refactor-lsp-show-stats)
            (rlsp-wait (lambda () (cl-some (lambda (m) (string-match-p "refactor-lsp: [a-z]+: with" m))
                                           rlsp-messages))
                       "the statistics"))))
    (error (plist-put rlsp-result :error (error-message-string err))))
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (plist-put rlsp-result :text (buffer-substring-no-properties (point-min) (point-max)))
      (plist-put rlsp-result :modified (if (buffer-modified-p) t :json-false))))
  (plist-put rlsp-result :messages (vconcat rlsp-messages))
  (let ((events (cl-find-if (lambda (b) (string-match-p "^\\*EGLOT .* events\\*$" (buffer-name b)))
                            (buffer-list))))
    (plist-put rlsp-result :events
               (if events (with-current-buffer events (buffer-substring-no-properties
                                                       (point-min) (point-max)))
                 "")))
  (with-temp-file (rlsp-get :results)
    (insert (json-serialize rlsp-result :false-object :json-false)))
  (ignore-errors
    (let ((server (and buffer (with-current-buffer buffer (eglot-current-server)))))
      (when server (eglot-shutdown server nil 2))))
  (kill-emacs 0))
