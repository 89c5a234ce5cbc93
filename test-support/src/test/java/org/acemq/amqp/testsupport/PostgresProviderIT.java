package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class PostgresProviderIT {

    @Test
    void sharedServerIsRealPostgresAndTheSameInstanceEveryTime() throws SQLException {
        PostgresServer server = PostgresProvider.shared();
        assertThat(PostgresProvider.shared()).isSameAs(server);
        System.out.println("PostgresProviderIT uses " + server);
        try (Connection c = server.dataSource().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT current_setting('server_version_num')::int")) {
            rs.next();
            assertThat(rs.getInt(1)).isGreaterThanOrEqualTo(120000);
        }
    }

    @Test
    void schemasAreIsolatedAndDroppedOnClose() throws SQLException {
        PostgresServer server = PostgresProvider.shared();
        try (PostgresSchema a = server.newSchema("ProviderIT a"); PostgresSchema b = server.newSchema("ProviderIT")) {
            assertThat(a.name()).startsWith("t_providerita_");
            assertThat(b.name()).startsWith("t_providerit_");
            run(a, "CREATE TABLE things (id int)");
            run(a, "INSERT INTO things VALUES (1)");
            run(b, "CREATE TABLE things (id int)");
            assertThat(count(a, "SELECT count(*) FROM things")).isEqualTo(1);
            assertThat(count(b, "SELECT count(*) FROM things")).isZero();
            assertThat(count(b, "SELECT count(*) FROM " + a.qualify("things"))).isEqualTo(1);
            a.close();
            assertThat(count(b, "SELECT count(*) FROM pg_namespace WHERE nspname = '" + a.name() + "'")).isZero();
        }
    }

    @Test
    void aWrongEnvironmentUrlIsReportedNotSkipped() {
        assertThatThrownBy(() -> PostgresProvider.locate(Map.of(PostgresProvider.URL_ENV, "jdbc:mysql://x/y")))
                .isInstanceOf(PostgresUnavailableException.class)
                .hasMessageContaining("ACEMQ_TEST_JDBC_URL must start with jdbc:postgresql:")
                .hasMessageContaining("install and start Docker")
                .hasMessageContaining("unprivileged user namespaces");
        assertThatThrownBy(() -> PostgresProvider.locate(
                Map.of(PostgresProvider.URL_ENV, "jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2")))
                .isInstanceOf(PostgresUnavailableException.class)
                .hasMessageContaining("Cannot connect to ACEMQ_TEST_JDBC_URL");
    }

    private static void run(PostgresSchema schema, String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private static long count(PostgresSchema schema, String sql) throws SQLException {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
