package bookmarks

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// pageSize is the number of bookmarks returned by one list request.
const pageSize = 50

// Bookmark is a saved link owned by one user.
type Bookmark struct {
	ID        int64     `json:"id"`
	UserID    int64     `json:"user_id"`
	URL       string    `json:"url"`
	Title     string    `json:"title"`
	Tags      []string  `json:"tags"`
	CreatedAt time.Time `json:"created_at"`
}

// ListFilter narrows down a listing.
type ListFilter struct {
	UserID int64
	Tag    string
	Query  string
	Offset int
	Limit  int
}

var (
	ErrNotFound  = errors.New("bookmark not found")
	ErrDuplicate = errors.New("bookmark already exists")
)

// Store persists bookmarks.
type Store interface {
	List(ctx context.Context, f ListFilter) ([]Bookmark, int, error)
	Get(ctx context.Context, userID, id int64) (Bookmark, error)
	Create(ctx context.Context, b Bookmark) (Bookmark, error)
	Delete(ctx context.Context, userID, id int64) error
}

// Handler serves the bookmarks HTTP API.
type Handler struct {
	store  Store
	logger *slog.Logger
	now    func() time.Time
}

// NewHandler returns a Handler backed by store.
func NewHandler(store Store, logger *slog.Logger) *Handler {
	return &Handler{store: store, logger: logger, now: time.Now}
}

// Routes registers the API endpoints on mux.
func (h *Handler) Routes(mux *http.ServeMux) {
	mux.HandleFunc("/bookmarks", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			h.handleList(w, r)
		case http.MethodPost:
			h.handleCreate(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		}
	})
	mux.HandleFunc("/bookmarks/", h.handleItem)
}

type listResponse struct {
	Items  []Bookmark `json:"items"`
	Total  int        `json:"total"`
	Offset int        `json:"offset"`
	Next   *int       `json:"next,omitempty"`
}

func (h *Handler) handleList(w http.ResponseWriter, r *http.Request) {
	const maxLimit = 200
	userID, ok := userFromContext(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "authentication required")
		return
	}
	q := r.URL.Query()
	offset := 0
	if raw := q.Get("offset"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "offset must be a non-negative integer")
			return
		}
		offset = n
	}
	limit := pageSize
	if raw := q.Get("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, "limit must be an integer between 1 and "+strconv.Itoa(maxLimit))
			return
		}
		limit = n
	}
	filter := ListFilter{
		UserID: userID,
		Tag:    strings.TrimSpace(q.Get("tag")),
		Query:  strings.TrimSpace(q.Get("q")),
		Offset: offset,
		Limit:  limit,
	}
	items, total, err := h.store.List(r.Context(), filter)
	if err != nil {
		h.logger.Error("list bookmarks", "user", userID, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	resp := listResponse{Items: items, Total: total, Offset: offset}
	if next := offset + len(items); next < total {
		resp.Next = &next
	}
	writeJSON(w, http.StatusOK, resp)
}

type createRequest struct {
	URL   string   `json:"url"`
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
}

func (h *Handler) handleCreate(w http.ResponseWriter, r *http.Request) {
	userID, ok := userFromContext(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "authentication required")
		return
	}
	var req createRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body")
		return
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		writeError(w, http.StatusUnprocessableEntity, "url must be an absolute http(s) URL")
		return
	}
	b, err := h.store.Create(r.Context(), Bookmark{
		UserID:    userID,
		URL:       u.String(),
		Title:     strings.TrimSpace(req.Title),
		Tags:      normalizeTags(req.Tags),
		CreatedAt: h.now().UTC(),
	})
	switch {
	case errors.Is(err, ErrDuplicate):
		writeError(w, http.StatusConflict, "bookmark already exists")
	case err != nil:
		h.logger.Error("create bookmark", "user", userID, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error")
	default:
		writeJSON(w, http.StatusCreated, b)
	}
}

func (h *Handler) handleItem(w http.ResponseWriter, r *http.Request) {
	userID, ok := userFromContext(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "authentication required")
		return
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/bookmarks/"), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	switch r.Method {
	case http.MethodGet:
		b, err := h.store.Get(r.Context(), userID, id)
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "not found")
			return
		} else if err != nil {
			h.logger.Error("get bookmark", "id", id, "err", err)
			writeError(w, http.StatusInternalServerError, "internal error")
			return
		}
		writeJSON(w, http.StatusOK, b)
	case http.MethodDelete:
		err := h.store.Delete(r.Context(), userID, id)
		if errors.Is(err, ErrNotFound) {
			writeError(w, http.StatusNotFound, "not found")
			return
		} else if err != nil {
			h.logger.Error("delete bookmark", "id", id, "err", err)
			writeError(w, http.StatusInternalServerError, "internal error")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

func normalizeTags(tags []string) []string {
	seen := make(map[string]bool, len(tags))
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

type ctxKey struct{}

// WithUser returns a context carrying the authenticated user's ID.
func WithUser(ctx context.Context, userID int64) context.Context {
	return context.WithValue(ctx, ctxKey{}, userID)
}

func userFromContext(ctx context.Context) (int64, bool) {
	id, ok := ctx.Value(ctxKey{}).(int64)
	return id, ok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
