package main

import (
	"reflect"
	"testing"
)

// A list of names is given as a,b,c or as a JSON array.
func TestJSONValueOfAList(t *testing.T) {
	typ := reflect.TypeFor[[]string]()
	for val, want := range map[string]string{
		"id":           `["id"]`,
		"id, name,ts":  `["id","name","ts"]`,
		`["id","a,b"]`: `["id","a,b"]`,
		` ["id"]`:      ` ["id"]`,
	} {
		got, err := jsonValue(typ, val)
		if err != nil || string(got) != want {
			t.Errorf("%q: %s, %v; want %s", val, got, err, want)
		}
	}
}
