// Package arn parses table-bucket ARNs in the forms S3 Tables and OSS Tables
// use, so that every part of icekeeper agrees on what a bucket's name is.
package arn

import (
	"fmt"
	"regexp"
	"strings"
)

// BucketARN is a parsed table-bucket ARN.
//
//	arn:aws:s3tables:us-east-1:111122223333:bucket/analytics   (S3 Tables)
//	acs:osstables:cn-hangzhou:1234567890:bucket/analytics     (OSS Tables)
type BucketARN struct {
	Partition string // "aws", "aws-cn", …; empty for the acs form
	Service   string // "s3tables" or "osstables"
	Region    string
	Account   string
	Name      string
}

// bucketName follows the S3 Tables rules for table-bucket names: 3–63
// characters, lower-case letters, digits and hyphens, starting and ending
// with a letter or digit.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

var field = regexp.MustCompile(`^[a-z0-9-]+$`)

// account is AWS's 12 digits, Alibaba's digits, or a name: SeaweedFS puts
// its identity's name there ("admin").
var account = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Parse parses s, naming the part that is wrong when it fails.
func Parse(s string) (BucketARN, error) {
	parts := strings.SplitN(s, ":", 6)
	var a BucketARN
	var resource string
	switch {
	case len(parts) >= 1 && parts[0] == "arn":
		if len(parts) != 6 {
			return a, fmt.Errorf("%q is not a table-bucket ARN (want arn:PARTITION:SERVICE:REGION:ACCOUNT:bucket/NAME)", s)
		}
		a = BucketARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4]}
		resource = parts[5]
		if !field.MatchString(a.Partition) {
			return a, fmt.Errorf("%q: partition %q is not valid", s, a.Partition)
		}
	case len(parts) >= 1 && parts[0] == "acs":
		parts = strings.SplitN(s, ":", 5)
		if len(parts) != 5 {
			return a, fmt.Errorf("%q is not a table-bucket ARN (want acs:osstables:REGION:ACCOUNT:bucket/NAME)", s)
		}
		a = BucketARN{Service: parts[1], Region: parts[2], Account: parts[3]}
		resource = parts[4]
	default:
		return a, fmt.Errorf("%q is not a table-bucket ARN (want arn:PARTITION:SERVICE:REGION:ACCOUNT:bucket/NAME or acs:osstables:REGION:ACCOUNT:bucket/NAME)", s)
	}
	switch a.Service {
	case "s3tables", "osstables":
	default:
		return a, fmt.Errorf("%q: service %q is not s3tables or osstables", s, a.Service)
	}
	if !field.MatchString(a.Region) {
		return a, fmt.Errorf("%q: region %q is not valid", s, a.Region)
	}
	if !account.MatchString(a.Account) {
		return a, fmt.Errorf("%q: account %q is not valid (letters, digits, '-' and '_')", s, a.Account)
	}
	name, ok := strings.CutPrefix(resource, "bucket/")
	if !ok {
		return a, fmt.Errorf("%q: resource %q does not start with bucket/", s, resource)
	}
	if !bucketName.MatchString(name) {
		return a, fmt.Errorf("%q: bucket name %q is not valid (3-63 lower-case letters, digits and hyphens)", s, name)
	}
	a.Name = name
	return a, nil
}

// String formats the ARN in the form it was parsed from.
func (a BucketARN) String() string {
	if a.Partition == "" {
		return "acs:" + a.Service + ":" + a.Region + ":" + a.Account + ":bucket/" + a.Name
	}
	return "arn:" + a.Partition + ":" + a.Service + ":" + a.Region + ":" + a.Account + ":bucket/" + a.Name
}

// TableARN is the ARN of a table inside the bucket. S3 Tables names tables
// by a UUID; icekeeper has no such id for tables of arbitrary catalogs and
// names them by namespace and name instead, which is stable and readable.
func (a BucketARN) TableARN(namespace, name string) string {
	return a.String() + "/table/" + namespace + "/" + name
}
