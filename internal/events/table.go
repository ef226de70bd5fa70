package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// CloudEvent types for senders other than Lakekeeper. Their data is a JSON
// object naming the table by identifier, by location, or both:
//
//	{"namespace": ["sales", "eu"], "name": "orders", "location": "s3://bucket/sales/eu/orders", "warehouse": "lake"}
//
// namespace may also be one string, its levels joined by "."; warehouse is
// optional and names the warehouse (or table bucket) to tell tables of
// the same name apart. Lakekeeper's own types read the same fields.
const (
	TypeTableChanged = "icekeeper.table.changed"
	TypeTableDropped = "icekeeper.table.dropped"
)

// tableKind is the Kind of a CloudEvent type about tables, "" for any
// other type. Lakekeeper publishes, besides these, createView, updateView,
// dropView, renameView and the *GenericTable types, which are not about
// Iceberg tables.
func tableKind(typ string) string {
	switch typ {
	case "createTable", "registerTable", "updateTable", "renameTable", "undropTabulars", TypeTableChanged:
		return KindTableChanged
	case "dropTable", TypeTableDropped:
		return KindTableDropped
	}
	return ""
}

// actedOn lists the CloudEvent types icekeeper reads, for the reason it
// gives when it ignores another.
const actedOn = "createTable, registerTable, updateTable, renameTable, undropTabulars and " + TypeTableChanged +
	" (a check of the table); dropTable and " + TypeTableDropped + " (a check that records the drop)"

// tableEvent maps a CloudEvent to the table it is about; an event about
// something else, or naming a table by a name no table here can have, is
// returned with Ignored saying why.
//
// Lakekeeper (crates/lakekeeper/src/service/events/publisher.rs) names the
// table in extensions: name, namespace (levels joined by U+001F for
// updateTable, renameTable and undropTabulars, by "." for the others),
// warehouse-id, tabular-id and tabular-type ("Table", "View",
// "GenericTable"). Its data is the REST request where it sends one: the
// CommitTableRequest for updateTable (with "identifier"), the
// RenameTableRequest for renameTable (with "destination"), the
// CreateTableRequest for createTable (with "name" and maybe "location");
// null for the others. None of them carries the new metadata location.
func (ce cloudEvent) tableEvent() (Event, error) {
	ignored := func(why string) (Event, error) {
		return Event{Source: SourceCloudEvents, Type: ce.typ, Time: ce.time, Ignored: why}, nil
	}
	kind := tableKind(ce.typ)
	if kind == "" {
		return ignored(fmt.Sprintf("type %q is not one icekeeper acts on; it acts on %s", ce.typ, actedOn))
	}
	// undropTabulars also restores views.
	tt, err := ce.ext("tabular-type")
	if err != nil {
		return Event{}, err
	}
	if tt != "" && !strings.EqualFold(tt, "table") {
		return ignored(fmt.Sprintf("type %q is about a %s, not an Iceberg table", ce.typ, tt))
	}
	ref, err := ce.table()
	if err != nil {
		return Event{}, fmt.Errorf("type %q: %w", ce.typ, err)
	}
	for _, l := range append(slices.Clip(ref.namespace), ref.name) {
		if why := unsafeLevel(l); why != "" {
			return ignored(fmt.Sprintf("type %q names table %q in namespace %q: %s", ce.typ, ref.name, ref.namespace, why))
		}
	}
	warehouseID, err := ce.ext("warehouse-id")
	if err != nil {
		return Event{}, err
	}
	tableID, err := ce.ext("tabular-id")
	if err != nil {
		return Event{}, err
	}
	return Event{
		Source:      SourceCloudEvents,
		Kind:        kind,
		Type:        ce.typ,
		Location:    ref.location,
		Namespace:   ref.namespace,
		Name:        ref.name,
		Warehouse:   ref.warehouse,
		WarehouseID: warehouseID,
		TableID:     tableID,
		Time:        ce.time,
	}, nil
}

// unsafeLevel says why a namespace level or table name is one icekeeper
// does not act on, "" when it may: a level that a path or a URL resolves
// ("." and "..") or splits ("/", "\\") names another table's prefix, and
// control characters no catalog gives a table.
func unsafeLevel(l string) string {
	switch {
	case l == "." || l == "..":
		return fmt.Sprintf("%q is not a name a table can have here (it resolves to another path)", l)
	case strings.ContainsAny(l, "/\\"):
		return fmt.Sprintf("%q holds a path separator", l)
	case strings.ContainsFunc(l, unicode.IsControl):
		return fmt.Sprintf("%q holds a control character", l)
	}
	return ""
}

// tableRef is what an event says identifies its table.
type tableRef struct {
	namespace                 []string
	name, location, warehouse string
}

// table reads the table's identifier and location from the extensions
// and the data. The data wins where both name the table: its namespace
// is a list, which a joined extension can only approximate (a level
// holding a "." splits in two), and for renameTable it names the table
// as it is now called rather than as it was (Lakekeeper releases that
// send renameTable without data name the old one).
func (ce cloudEvent) table() (tableRef, error) {
	var ref tableRef
	ns, err := ce.ext("namespace")
	if err != nil {
		return ref, err
	}
	if ref.namespace, err = splitNamespace("extension namespace", ns); err != nil {
		return ref, err
	}
	if ref.name, err = ce.ext("name"); err != nil {
		return ref, err
	}

	d, err := decodeTableData(ce.data)
	if err != nil {
		return ref, err
	}
	if d.namespace != nil {
		ref.namespace = d.namespace
	}
	if d.Name != "" {
		ref.name = d.Name
	}
	id := d.Identifier
	if ce.typ == "renameTable" && d.Destination != nil {
		id = d.Destination
	}
	if id != nil {
		if err := id.check(); err != nil {
			return ref, err
		}
		ref.namespace, ref.name = id.Namespace, id.Name
	}
	ref.location, ref.warehouse = d.location(), d.Warehouse

	switch {
	case ref.name != "" && len(ref.namespace) == 0:
		return ref, fmt.Errorf("names table %q but no namespace", ref.name)
	case ref.name == "" && ref.location == "":
		return ref, errors.New("names no table: no name or location in its data or extensions")
	case ref.location != "" && !strings.Contains(ref.location, "://"):
		return ref, fmt.Errorf("location %q is not a URI", ref.location)
	}
	return ref, nil
}

// tableData is the part of an event's data that identifies a table:
// icekeeper's own fields, and those of the Iceberg REST requests
// Lakekeeper sends.
type tableData struct {
	Namespace json.RawMessage `json:"namespace"`
	Name      string          `json:"name"`
	Location  string          `json:"location"`
	Warehouse string          `json:"warehouse"`

	Identifier  *tableIdent `json:"identifier"`  // CommitTableRequest
	Destination *tableIdent `json:"destination"` // RenameTableRequest
	Updates     []struct {  // CommitTableRequest
		Action   string `json:"action"`
		Location string `json:"location"`
	} `json:"updates"`

	namespace []string // Namespace decoded
}

// location is the table's location: given outright, or set by the
// commit the event reports.
func (d tableData) location() string {
	loc := d.Location
	for _, u := range d.Updates {
		if u.Action == "set-location" && u.Location != "" {
			loc = u.Location
		}
	}
	return loc
}

// tableIdent is an Iceberg REST TableIdentifier.
type tableIdent struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (id *tableIdent) check() error {
	if id.Name == "" {
		return errors.New("data's table identifier has no name")
	}
	if len(id.Namespace) == 0 {
		return fmt.Errorf("data's table identifier %q has no namespace", id.Name)
	}
	return checkLevels("data's table identifier namespace", id.Namespace)
}

func decodeTableData(b []byte) (tableData, error) {
	var d tableData
	if b == nil {
		return d, nil
	}
	if err := checkJSON("data", b); err != nil {
		return d, err
	}
	switch firstByte(b) {
	case 'n': // null, as checkJSON let it through
		return d, nil
	case '{':
	default:
		return d, errors.New("data is not a JSON object")
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("data: %w", err)
	}
	if isNull(d.Namespace) {
		return d, nil
	}
	var s string
	if json.Unmarshal(d.Namespace, &s) == nil {
		var err error
		d.namespace, err = splitNamespace("data.namespace", s)
		return d, err
	}
	if err := json.Unmarshal(d.Namespace, &d.namespace); err != nil {
		return d, errors.New("data.namespace is neither a list of levels nor a string")
	}
	return d, checkLevels("data.namespace", d.namespace)
}

// firstByte is b's first byte that is not JSON white space, 0 if none.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// splitNamespace splits a namespace given as one string: on U+001F, the
// Iceberg REST separator, when it holds one, else on ".". "" is none.
func splitNamespace(field, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	sep := "."
	if strings.Contains(s, "\x1f") {
		sep = "\x1f"
	}
	levels := strings.Split(s, sep)
	if err := checkLevels(field, levels); err != nil {
		return nil, fmt.Errorf("%s %q has an empty level", field, s)
	}
	return levels, nil
}

func checkLevels(field string, levels []string) error {
	for i, l := range levels {
		if l == "" {
			return fmt.Errorf("%s: level %d is empty", field, i+1)
		}
	}
	return nil
}
