// Package catalogsync keeps the shop's product table in step with the supplier's catalogue.
package catalogsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Product is one row of our product table.
type Product struct {
	SKU        string
	Name       string
	PriceCents int64
	Stock      int
	Archived   bool
	UpdatedAt  time.Time
	Checksum   string
}

// Item is one entry of the supplier's catalogue.
type Item struct {
	SKU        string
	Title      string
	PriceCents int64
	Available  int
	Withdrawn  bool
	Revision   string
}

// Page is one page of the supplier's catalogue.
type Page struct {
	Items []Item
	Next  string
}

// Supplier reads the supplier's catalogue.
type Supplier interface {
	Page(ctx context.Context, cursor string) (Page, error)
}

// Store reads and writes our product table.
type Store interface {
	All(ctx context.Context) (map[string]Product, error)
	Upsert(ctx context.Context, products []Product) error
	Archive(ctx context.Context, skus []string) error
	LastSync(ctx context.Context) (time.Time, error)
	SetLastSync(ctx context.Context, at time.Time) error
}

// Report says what a reconciliation did, or would do in a dry run.
type Report struct {
	Pages      int
	Seen       int
	Created    []string
	Updated    []string
	Archived   []string
	Skipped    map[string]string // SKU → why
	PriceJumps []string
	Restored   []string
	StockDrops []string
	Duration   time.Duration
	DryRun     bool
}

// Summary is the report in one line, for the log and the admin page.
func (r Report) Summary() string {
	mode := ""
	if r.DryRun {
		mode = " (dry run)"
	}
	return fmt.Sprintf("%d items on %d pages: %d created, %d updated, %d archived, %d skipped in %s%s",
		r.Seen, r.Pages, len(r.Created), len(r.Updated), len(r.Archived), len(r.Skipped), r.Duration.Round(time.Millisecond), mode)
}

// Options tune a reconciliation.
type Options struct {
	DryRun         bool
	BatchSize      int     // products written per Upsert call
	MaxPages       int     // a guard against a supplier whose cursor never ends
	MaxPriceJump   float64 // a relative price change above this is held for review, not applied
	ArchiveMissing bool    // archive our products the catalogue no longer lists
	MinShare       float64 // with ArchiveMissing: refuse when the catalogue lists fewer of our products than this share
}

// ErrTooManyPages is returned when the catalogue has more pages than Options.MaxPages.
var ErrTooManyPages = errors.New("the supplier's catalogue did not end within the page limit")

// Syncer reconciles a Store with a Supplier.
type Syncer struct {
	supplier Supplier
	store    Store
	log      Logger
	now      func() time.Time
}

// NewSyncer makes a Syncer; a nil logger discards the log.
func NewSyncer(supplier Supplier, store Store, log Logger) *Syncer {
	if log == nil {
		log = discard{}
	}
	return &Syncer{supplier: supplier, store: store, log: log, now: time.Now}
}

// Logger is where a Syncer writes what it did; a *log.Logger is one.
type Logger interface {
	Printf(format string, args ...any)
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// Reconcile reads the whole catalogue, compares it with our products and writes the differences:
// new items are created, changed ones updated, withdrawn (and, with ArchiveMissing, unlisted) ones
// archived. Price changes larger than MaxPriceJump are not applied but reported, because a supplier's
// typo in a price costs more than a day's delay. In a dry run nothing is written.
//
// With ArchiveMissing, a catalogue that lists fewer than MinShare of our active products stops the
// run before anything is written: suppliers have sent half a catalogue during outages. Products
// listed again after an archive are restored and reported, and large stock drops are logged so the
// buyers hear of them before the customers do.
func (s *Syncer) Reconcile(ctx context.Context, opts Options) (Report, error) {
	started := s.now()
	report := Report{Skipped: map[string]string{}, DryRun: opts.DryRun}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 200
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = 10_000
	}
	if opts.MaxPriceJump <= 0 {
		opts.MaxPriceJump = 0.5
	}
	if opts.MinShare <= 0 {
		opts.MinShare = 0.8
	}

	current, err := s.store.All(ctx)
	if err != nil {
		return report, fmt.Errorf("reading our products: %w", err)
	}
	lastSync, err := s.store.LastSync(ctx)
	if err != nil {
		return report, fmt.Errorf("reading the last sync time: %w", err)
	}
	s.log.Printf("reconciling %d products, last synced %s, dry run %t", len(current), lastSync.Format(time.RFC3339), opts.DryRun)

	// Read the whole catalogue first: a sync that stops half-way must not archive what it did not reach.
	catalogue := make(map[string]Item, len(current))
	cursor := ""
	for {
		if report.Pages >= opts.MaxPages {
			return report, fmt.Errorf("%w (%d pages)", ErrTooManyPages, opts.MaxPages)
		}
		page, err := s.supplier.Page(ctx, cursor)
		if err != nil {
			return report, fmt.Errorf("reading catalogue page %d: %w", report.Pages+1, err)
		}
		report.Pages++
		for _, item := range page.Items {
			sku := strings.ToUpper(strings.TrimSpace(item.SKU))
			if sku == "" {
				report.Skipped[fmt.Sprintf("(page %d, no SKU)", report.Pages)] = "an item without a SKU"
				continue
			}
			if previous, seen := catalogue[sku]; seen && previous.Revision >= item.Revision {
				// The supplier lists some items twice across pages; the newest revision wins.
				continue
			}
			item.SKU = sku
			catalogue[sku] = item
			report.Seen++
		}
		if page.Next == "" || page.Next == cursor {
			break
		}
		cursor = page.Next
	}

	// A catalogue that suddenly lacks most of our products is a supplier outage, not a clearance sale:
	// archiving on its word would empty the shop.
	if opts.ArchiveMissing {
		active, listed := 0, 0
		for sku, product := range current {
			if product.Archived {
				continue
			}
			active++
			if _, ok := catalogue[sku]; ok {
				listed++
			}
		}
		if active > 0 && float64(listed) < opts.MinShare*float64(active) {
			return report, fmt.Errorf("the catalogue lists only %d of our %d active products (under %.0f%%); "+
				"not archiving the rest — check the supplier, or lower MinShare", listed, active, opts.MinShare*100)
		}
	}

	// Compare, in SKU order so that reports and batches are stable from one run to the next.
	skus := make([]string, 0, len(catalogue))
	for sku := range catalogue {
		skus = append(skus, sku)
	}
	sort.Strings(skus)

	var changes []Product
	var toArchive []string
	for _, sku := range skus {
		item := catalogue[sku]
		existing, known := current[sku]
		if item.Withdrawn {
			if known && !existing.Archived {
				toArchive = append(toArchive, sku)
			}
			continue
		}
		if item.PriceCents <= 0 {
			report.Skipped[sku] = fmt.Sprintf("a price of %d cents", item.PriceCents)
			continue
		}
		if item.Available < 0 {
			item.Available = 0
		}
		name := strings.Join(strings.Fields(item.Title), " ")
		if runes := []rune(name); len(runes) > 120 {
			// The shop's product cards cut at 120 characters; cut at a word so the card reads well.
			name = string(runes[:120])
			if space := strings.LastIndex(name, " "); space > 80 {
				name = name[:space]
			}
			name += "…"
		}
		product := Product{
			SKU:        sku,
			Name:       name,
			PriceCents: item.PriceCents,
			Stock:      item.Available,
			UpdatedAt:  started,
			Checksum:   item.Revision,
		}
		if !known {
			changes = append(changes, product)
			report.Created = append(report.Created, sku)
			continue
		}
		if existing.Checksum == item.Revision && !existing.Archived {
			continue
		}
		if existing.Archived {
			// Listed again after a withdrawal: back in the shop, and said so, since someone archived it.
			report.Restored = append(report.Restored, sku)
		}
		if existing.Stock >= 20 && product.Stock*4 < existing.Stock {
			report.StockDrops = append(report.StockDrops, fmt.Sprintf("%s: %d → %d", sku, existing.Stock, product.Stock))
		}
		if jump := relativeChange(existing.PriceCents, item.PriceCents); jump > opts.MaxPriceJump {
			report.PriceJumps = append(report.PriceJumps,
				fmt.Sprintf("%s: %s → %s (%+.0f%%)", sku, cents(existing.PriceCents), cents(item.PriceCents), jump*100))
			product.PriceCents = existing.PriceCents
		}
		if product.Name == "" {
			product.Name = existing.Name
		}
		changes = append(changes, product)
		report.Updated = append(report.Updated, sku)
	}
	if opts.ArchiveMissing {
		for sku, product := range current {
			if _, listed := catalogue[sku]; !listed && !product.Archived {
				toArchive = append(toArchive, sku)
			}
		}
	}
	sort.Strings(toArchive)
	report.Archived = toArchive

	if opts.DryRun {
		report.Duration = s.now().Sub(started)
		s.log.Printf("dry run: %s", report.Summary())
		return report, nil
	}

	// Write in batches; a failed batch stops the sync, and the last-sync time is left as it was, so
	// the next run compares against the same baseline and redoes the rest.
	for start := 0; start < len(changes); start += opts.BatchSize {
		end := start + opts.BatchSize
		if end > len(changes) {
			end = len(changes)
		}
		if err := s.store.Upsert(ctx, changes[start:end]); err != nil {
			return report, fmt.Errorf("writing products %d–%d of %d: %w", start+1, end, len(changes), err)
		}
		s.log.Printf("wrote products %d–%d", start+1, end)
	}
	if len(toArchive) > 0 {
		if err := s.store.Archive(ctx, toArchive); err != nil {
			return report, fmt.Errorf("archiving %d products: %w", len(toArchive), err)
		}
	}
	if err := s.store.SetLastSync(ctx, started); err != nil {
		return report, fmt.Errorf("recording the sync time: %w", err)
	}

	report.Duration = s.now().Sub(started)
	for _, line := range report.PriceJumps {
		s.log.Printf("price change held for review: %s", line)
	}
	for _, line := range report.StockDrops {
		s.log.Printf("stock fell by three quarters or more: %s", line)
	}
	if len(report.Restored) > 0 {
		s.log.Printf("listed again: %s", strings.Join(report.Restored, ", "))
	}
	s.log.Printf("reconciled: %s", report.Summary())
	return report, nil
}

func relativeChange(from, to int64) float64 {
	if from == 0 {
		return 0
	}
	change := float64(to-from) / float64(from)
	if change < 0 {
		return -change
	}
	return change
}

func cents(value int64) string {
	return fmt.Sprintf("%d.%02d", value/100, value%100)
}
