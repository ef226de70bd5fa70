package cost

// Prices are what storage and managed maintenance charge, in US dollars.
// The defaults are Amazon S3 Tables' published prices (us-east-1): the
// requests of S3 Standard, and compaction by objects and GB processed.
type Prices struct {
	// PutPer1000 prices PUT, POST, LIST and COPY requests.
	PutPer1000 float64 `yaml:"putPer1000" json:"putPer1000"`
	// GetPer1000 prices GET and HEAD requests, and catalog requests.
	GetPer1000 float64 `yaml:"getPer1000" json:"getPer1000"`
	// ObjectsPer1000, BinpackPerGB and SortPerGB price S3 Tables'
	// compaction: per object processed, and per GB processed by a
	// bin-pack or by a sort or z-order.
	ObjectsPer1000 float64 `yaml:"objectsPer1000" json:"objectsPer1000"`
	BinpackPerGB   float64 `yaml:"binpackPerGB" json:"binpackPerGB"`
	SortPerGB      float64 `yaml:"sortPerGB" json:"sortPerGB"`
}

// DefaultPrices are S3 Tables' published prices: requests $0.005 per
// 1,000 PUT, POST, LIST; $0.0004 per 1,000 GET and others; DELETE free;
// compaction $0.002 per 1,000 objects and $0.005 per GB bin-packed,
// $0.01 per GB sorted or z-ordered.
func DefaultPrices() Prices {
	return Prices{PutPer1000: 0.005, GetPer1000: 0.0004, ObjectsPer1000: 0.002, BinpackPerGB: 0.005, SortPerGB: 0.01}
}

// requests prices requests by kind; deletes are free.
func (p Prices) requests(byKind map[string]int64) float64 {
	var usd float64
	for k, n := range byKind {
		switch k {
		case Put, Post, List:
			usd += float64(n) / 1000 * p.PutPer1000
		case Get, Head, Catalog:
			usd += float64(n) / 1000 * p.GetPer1000
		}
	}
	return usd
}
