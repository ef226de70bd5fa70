// Command mktables fills an embedded-default home with many empty tables,
// for the API benchmark (scripts/bench-api.sh). It is a benchmark fixture,
// not part of icekeeper.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/configs"
	"github.com/icekeeper/icekeeper/internal/demo"
)

func main() {
	home := flag.String("home", "", "embedded-default data directory to fill")
	n := flag.Int("tables", 1000, "tables to create")
	flag.Parse()
	if *home == "" {
		log.Fatal("--home is required")
	}
	if err := os.MkdirAll(filepath.Join(*home, "warehouse"), 0o755); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	reg := configs.Embedded(*home).Registry()
	defer reg.Close()
	b, _ := reg.Bucket("local")
	cat, err := b.Catalog(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < *n; i++ {
		if _, err := cat.CreateTable(ctx, table.Identifier{"bench", fmt.Sprintf("t%05d", i)}, demo.Schema()); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("created %d tables in %s\n", *n, *home)
}
