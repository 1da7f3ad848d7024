module github.com/ptopofl/ptopofl/tools/workflowcheck

go 1.26.8

require go.temporal.io/sdk/contrib/tools/workflowcheck v0.6.0

require (
	golang.org/x/mod v0.30.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/tools v0.39.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
