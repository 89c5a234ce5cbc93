package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.acemq.amqp.api.IdempotencyStore;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.store.jdbc.JdbcDialect;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.MariaDbDatabase;
import org.acemq.amqp.testsupport.MariaDbProvider;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * The starter on MariaDB (see {@link MariaDbProvider}) and on H2: the store's dialect is read from the application's
 * DataSource, and the shipped per-dialect Flyway migrations and Liquibase changelogs create exactly the table the
 * store's own {@code createSchema()} creates.
 */
@Timeout(240)
class JdbcStarterDialectsIT {

    static final List<MariaDbDatabase> databases = new ArrayList<>();
    final List<ConfigurableApplicationContext> apps = new ArrayList<>();

    @AfterEach
    void closeApps() {
        apps.forEach(ConfigurableApplicationContext::close);
    }

    @AfterAll
    static void dropDatabases() {
        databases.forEach(MariaDbDatabase::close);
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class StoreOnlyApp {
    }

    static MariaDbDatabase mariaDb(String hint) {
        MariaDbDatabase db = MariaDbProvider.shared().newDatabase(hint);
        databases.add(db);
        return db;
    }

    static String h2Url(String hint) {
        return "jdbc:h2:mem:" + hint + "_" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    }

    ConfigurableApplicationContext start(String url, String user, String password, String... properties) {
        List<String> all = new ArrayList<>(List.of(SharedBroker.connectionProperties()));
        all.add("spring.datasource.url=" + url);
        all.add("spring.datasource.username=" + (user == null ? "" : user));
        all.add("spring.datasource.password=" + (password == null ? "" : password));
        all.add("acemq.store.type=jdbc");
        all.add("spring.flyway.enabled=false");
        all.add("spring.liquibase.enabled=false");
        all.addAll(List.of(properties));
        ConfigurableApplicationContext context = new SpringApplicationBuilder(StoreOnlyApp.class)
                .web(WebApplicationType.NONE).properties(all.toArray(String[]::new)).run();
        apps.add(context);
        return context;
    }

    static void storeWorks(IdempotencyStore store) {
        String id = "s:" + UUID.randomUUID();
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.CLAIMED);
        store.confirm(id);
        assertThat(store.tryClaim(id)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    // ------------------------------------------------------------------------------------------------ MariaDB

    /** Columns, indexes and check constraints of {@code acemq_idempotency} in a MariaDB database. */
    static List<String> mariaDbDefinition(JdbcTemplate jdbc, String database) {
        return mariaDbDefinition(jdbc, database, "acemq_idempotency");
    }

    /** Columns (with defaults), indexes and check constraints of a table in a MariaDB database. */
    static List<String> mariaDbDefinition(JdbcTemplate jdbc, String database, String table) {
        List<String> out = new ArrayList<>();
        out.addAll(jdbc.queryForList("SELECT CONCAT('column ', column_name, ' ', column_type, ' nullable=', "
                + "is_nullable, ' charset=', IFNULL(character_set_name, '-'), ' #', ordinal_position, "
                + "IFNULL(CONCAT(' default ', column_default), '')) "
                + "FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
                + "ORDER BY ordinal_position", String.class, database, table));
        out.addAll(jdbc.queryForList("SELECT CONCAT('index ', index_name, ' ', seq_in_index, ' ', column_name, "
                + "' unique=', 1 - non_unique) FROM information_schema.statistics WHERE table_schema = ? "
                + "AND table_name = ? ORDER BY index_name, seq_in_index", String.class, database, table));
        out.addAll(jdbc.queryForList("SELECT CONCAT('check ', constraint_name, ' ', check_clause) "
                + "FROM information_schema.check_constraints WHERE constraint_schema = ? "
                + "AND table_name = ? ORDER BY constraint_name", String.class, database, table));
        return out;
    }

    List<String> mariaDbStoresOwnOutbox() {
        MariaDbDatabase reference = mariaDb("reference-outbox");
        JdbcIdempotencyStore.builder(dataSource(reference)).build().createSchema();
        return mariaDbDefinition(new JdbcTemplate(dataSource(reference)), reference.name(), "acemq_outbox");
    }

    static DataSource dataSource(MariaDbDatabase db) {
        return new DriverManagerDataSource(db.jdbcUrl(), db.user(), db.password());
    }

    List<String> mariaDbStoresOwnSchema() {
        MariaDbDatabase reference = mariaDb("reference");
        JdbcIdempotencyStore.builder(dataSource(reference)).build().createSchema();
        return mariaDbDefinition(new JdbcTemplate(dataSource(reference)), reference.name());
    }

    @Test
    void onMariaDbTheStarterReadsTheDialectFromTheDataSourceAndCreatesTheSchema() {
        MariaDbDatabase db = mariaDb("starter");
        ConfigurableApplicationContext app = start(db.jdbcUrl(), db.user(), db.password());
        JdbcIdempotencyStore store = app.getBean(JdbcIdempotencyStore.class);
        assertThat(store.dialect()).isEqualTo(JdbcDialect.MARIADB);
        storeWorks(store);
    }

    @Test
    void onMariaDbTheFlywayMigrationsCreateTheStoresOwnSchema() {
        MariaDbDatabase db = mariaDb("flyway");
        Flyway.configure().dataSource(dataSource(db)).locations("classpath:db/acemq/mariadb/flyway")
                .table("acemq_schema_history").load().migrate();
        assertThat(mariaDbDefinition(new JdbcTemplate(dataSource(db)), db.name())).isNotEmpty()
                .isEqualTo(mariaDbStoresOwnSchema());
        assertThat(mariaDbDefinition(new JdbcTemplate(dataSource(db)), db.name(), "acemq_outbox")).as("V2: the outbox")
                .isNotEmpty().isEqualTo(mariaDbStoresOwnOutbox());
        storeWorks(JdbcIdempotencyStore.builder(dataSource(db)).build());
    }

    @Test
    void onMariaDbTheLiquibaseChangelogCreatesTheStoresOwnSchema() {
        MariaDbDatabase db = mariaDb("liquibase");
        ConfigurableApplicationContext app = start(db.jdbcUrl(), db.user(), db.password(),
                "spring.liquibase.enabled=true",
                "spring.liquibase.change-log=classpath:db/acemq/mariadb/liquibase/acemq-idempotency.sql",
                "acemq.store.jdbc.initialize-schema=false");
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        assertThat(jdbc.queryForList("SELECT id FROM DATABASECHANGELOG WHERE author = 'acemq'", String.class))
                .containsExactly("acemq-idempotency-mariadb-1", "acemq-outbox-mariadb-1");
        assertThat(mariaDbDefinition(jdbc, db.name())).isNotEmpty().isEqualTo(mariaDbStoresOwnSchema());
        assertThat(mariaDbDefinition(jdbc, db.name(), "acemq_outbox")).isNotEmpty().isEqualTo(mariaDbStoresOwnOutbox());
        storeWorks(app.getBean(IdempotencyStore.class));
    }

    // ------------------------------------------------------------------------------------------------ H2

    /** Columns, indexes and check constraints of {@code acemq_idempotency} in an H2 database. */
    static List<String> h2Definition(JdbcTemplate jdbc) {
        return h2Definition(jdbc, "acemq_idempotency");
    }

    /** Columns (with defaults), indexes and check constraints of a table in an H2 database. */
    static List<String> h2Definition(JdbcTemplate jdbc, String table) {
        List<String> out = new ArrayList<>();
        out.addAll(jdbc.queryForList("SELECT CONCAT('column ', column_name, ' ', data_type, ' ', "
                + "IFNULL(character_maximum_length, -1), ' ', IFNULL(datetime_precision, -1), ' nullable=', "
                + "is_nullable, ' #', ordinal_position, IFNULL(CONCAT(' default ', column_default), '')) "
                + "FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position", String.class,
                table));
        // the primary key's index has a generated name (PRIMARY_KEY_xx) that depends on what else the database holds
        out.addAll(jdbc.queryForList("SELECT CONCAT('index ', CASE WHEN i.index_type_name = 'PRIMARY KEY' THEN "
                + "'(primary key)' ELSE i.index_name END, ' ', c.ordinal_position, ' ', c.column_name,"
                + " ' ', i.index_type_name) FROM information_schema.indexes i JOIN information_schema.index_columns c "
                + "ON c.index_name = i.index_name AND c.table_name = i.table_name "
                + "WHERE i.table_name = ? ORDER BY i.index_name, c.ordinal_position",
                String.class, table));
        out.addAll(jdbc.queryForList("SELECT CONCAT('constraint ', constraint_name, ' ', constraint_type) "
                + "FROM information_schema.table_constraints WHERE table_name = ? "
                + "ORDER BY constraint_name", String.class, table));
        out.addAll(jdbc.queryForList("SELECT CONCAT('check ', constraint_name, ' ', check_clause) "
                + "FROM information_schema.check_constraints WHERE constraint_name LIKE ? "
                + "ORDER BY constraint_name", String.class, table.toUpperCase(java.util.Locale.ROOT) + "%"));
        return out;
    }

    static List<String> h2StoresOwnSchema() {
        return h2StoresOwn("acemq_idempotency");
    }

    static List<String> h2StoresOwn(String table) {
        DataSource reference = new DriverManagerDataSource(h2Url("reference"), "sa", "");
        JdbcIdempotencyStore.builder(reference).build().createSchema();
        return h2Definition(new JdbcTemplate(reference), table);
    }

    @Test
    void onH2TheStarterReadsTheDialectFromTheDataSource() {
        ConfigurableApplicationContext app = start(h2Url("starter"), "sa", "");
        JdbcIdempotencyStore store = app.getBean(JdbcIdempotencyStore.class);
        assertThat(store.dialect()).isEqualTo(JdbcDialect.H2);
        storeWorks(store);
    }

    @Test
    void onH2TheFlywayMigrationsAndTheLiquibaseChangelogCreateTheStoresOwnSchema() {
        DataSource flyway = new DriverManagerDataSource(h2Url("flyway"), "sa", "");
        Flyway.configure().dataSource(flyway).locations("classpath:db/acemq/h2/flyway")
                .table("acemq_schema_history").load().migrate();
        List<String> expected = h2StoresOwnSchema();
        assertThat(h2Definition(new JdbcTemplate(flyway))).isNotEmpty().isEqualTo(expected);
        List<String> expectedOutbox = h2StoresOwn("acemq_outbox");
        assertThat(h2Definition(new JdbcTemplate(flyway), "acemq_outbox")).as("V2: the outbox").isNotEmpty()
                .isEqualTo(expectedOutbox);
        storeWorks(JdbcIdempotencyStore.builder(flyway).build());

        ConfigurableApplicationContext app = start(h2Url("liquibase"), "sa", "", "spring.liquibase.enabled=true",
                "spring.liquibase.change-log=classpath:db/acemq/h2/liquibase/acemq-idempotency.sql",
                "acemq.store.jdbc.initialize-schema=false");
        JdbcTemplate jdbc = new JdbcTemplate(app.getBean(DataSource.class));
        assertThat(h2Definition(jdbc)).isEqualTo(expected);
        assertThat(h2Definition(jdbc, "acemq_outbox")).isEqualTo(expectedOutbox);
        storeWorks(app.getBean(IdempotencyStore.class));
    }
}
