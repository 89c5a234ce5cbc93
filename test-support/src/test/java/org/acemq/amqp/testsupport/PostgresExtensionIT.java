package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link PostgresExtension} as test classes use it, through fixture classes run by the JUnit engine test kit. The
 * fixtures record the schemas they were given in {@link #SEEN}; afterwards the schemas must be gone.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresExtensionIT {

    static final List<String> SEEN = new CopyOnWriteArrayList<>();

    @Test
    void aStaticFieldGivesTheClassOneSchemaAndDropsItAfterwards() throws SQLException {
        SEEN.clear();
        Fixtures.run(SchemaPerClass.class).assertStatistics(s -> s.started(2).succeeded(2));
        assertThat(SEEN).hasSize(2).containsOnly(SEEN.get(0));
        assertThat(SEEN.get(0)).startsWith("t_schemaperclass_");
        assertThat(schemaExists(SEEN.get(0))).as("dropped after the class").isFalse();
    }

    @Test
    void anInstanceFieldGivesEveryTestANewSchema() throws SQLException {
        SEEN.clear();
        Fixtures.run(SchemaPerTest.class).assertStatistics(s -> s.started(2).succeeded(2));
        assertThat(SEEN).hasSize(2).doesNotHaveDuplicates();
        for (String schema : SEEN) {
            assertThat(schemaExists(schema)).as("%s dropped after its test", schema).isFalse();
        }
    }

    @Test
    void outsideTheTestsThereIsNoSchema() {
        assertThatThrownBy(() -> PostgresExtension.newSchema().schema())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("only inside the tests");
    }

    private static boolean schemaExists(String name) throws SQLException {
        try (Connection c = PostgresProvider.shared().dataSource().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = '" + name + "'")) {
            rs.next();
            return rs.getInt(1) > 0;
        }
    }

    private static int count(DataSource ds, String sql) throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getInt(1);
        }
    }

    // ---------------------------------------------------------------------------------------------------- fixtures

    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class SchemaPerClass {
        @RegisterExtension
        static final PostgresExtension POSTGRES = PostgresExtension.newSchema();

        @Test
        @Order(1)
        void unqualifiedTablesLandInTheSchema(DataSource dataSource) throws SQLException {
            SEEN.add(POSTGRES.schema().name());
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("CREATE TABLE orders (id int)");
                s.execute("INSERT INTO orders VALUES (1)");
            }
            assertThat(count(POSTGRES.schema().server().dataSource(),
                    "SELECT count(*) FROM " + POSTGRES.schema().qualify("orders"))).isEqualTo(1);
        }

        @Test
        @Order(2)
        void theNextTestSeesTheSameSchema(PostgresSchema schema) throws SQLException {
            SEEN.add(schema.name());
            assertThat(schema.jdbcUrl()).isEqualTo(POSTGRES.jdbcUrl()).contains("currentSchema=" + schema.name());
            assertThat(count(POSTGRES.dataSource(), "SELECT count(*) FROM orders")).isEqualTo(1);
        }
    }

    static class SchemaPerTest {
        @RegisterExtension
        final PostgresExtension postgres = PostgresExtension.newSchema();

        @Test
        void one() throws SQLException {
            SEEN.add(postgres.schema().name());
            assertThat(count(postgres.dataSource(), "SELECT count(*) FROM pg_tables WHERE schemaname = '"
                    + postgres.schema().name() + "'")).isZero();
        }

        @Test
        void two() throws SQLException {
            SEEN.add(postgres.schema().name());
            assertThat(postgres.schema().name()).startsWith("t_schemapertest_");
        }
    }
}
