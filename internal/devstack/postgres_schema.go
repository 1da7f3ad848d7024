package devstack

import (
	"fmt"

	"go.temporal.io/server/common/auth"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	pgplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Temporal's PostgreSQL schemas: the directories of versioned updates in
// the server module's embedded schema tree (go.temporal.io/server/schema),
// the same ones temporal-sql-tool's update-schema applies.
const (
	postgresSchema           = "postgresql/v12/temporal"
	postgresVisibilitySchema = "postgresql/v12/visibility"
	// postgresAdminDatabase is the database connected to while creating
	// Temporal's (it exists in every cluster initdb makes).
	postgresAdminDatabase = "postgres"
)

// postgresSQL is the Temporal SQL store configuration for database on d,
// through the pure-Go pgx driver.
func postgresSQL(d PostgresDB, database string) *config.SQL {
	var tc *auth.TLS
	if d.TLSCA != "" {
		tc = &auth.TLS{Enabled: true, CaFile: d.TLSCA, CertFile: d.TLSCert, KeyFile: d.TLSKey, EnableHostVerification: true}
	}
	return &config.SQL{
		TLS:          tc,
		PluginName:   pgplugin.PluginNamePGX,
		ConnectAddr:  d.Addr,
		User:         d.User,
		Password:     d.Password,
		DatabaseName: database,
		// Postgres's default max_connections is 100; two stores of a
		// single-process server need far fewer.
		MaxConns:     postgresMaxConns,
		MaxIdleConns: postgresMaxConns,
	}
}

// SetupPostgresSchema creates Temporal's two databases on d if missing and
// brings their schemas to the versions this server needs, with the
// server's own schema tool as a library: the equivalent of
// temporal-sql-tool create-database, setup-schema -v 0.0 and update-schema
// --schema-name postgresql/v12/{temporal,visibility}. Every step is
// idempotent, so it runs at every start and upgrades an older schema.
func SetupPostgresSchema(d PostgresDB) error {
	logger := log.NewNoopLogger()
	for _, s := range []struct{ db, schema string }{{d.Database, postgresSchema}, {d.Visibility, postgresVisibilitySchema}} {
		if err := sqltool.DoCreateDatabase(postgresSQL(d, s.db), postgresAdminDatabase, logger); err != nil {
			return fmt.Errorf("devstack: create database %s on %s: %w", s.db, d.Addr, err)
		}
		conn, err := sqltool.NewConnection(postgresSQL(d, s.db), logger)
		if err != nil {
			return fmt.Errorf("devstack: connect to database %s on %s: %w", s.db, d.Addr, err)
		}
		err = schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run()
		if err == nil {
			err = schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: s.db, SchemaName: s.schema}, logger).Run()
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("devstack: schema %s in database %s on %s: %w", s.schema, s.db, d.Addr, err)
		}
	}
	return nil
}

// pingPostgres logs in to d's admin database and runs a statement: the
// server is ready when this works, not when its port listens.
func pingPostgres(d PostgresDB) error {
	conn, err := sqltool.NewConnection(postgresSQL(d, postgresAdminDatabase), log.NewNoopLogger())
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Exec("SELECT 1")
}
