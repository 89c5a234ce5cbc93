package org.acemq.amqp.testsupport;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The Spring Boot properties that point an application at the broker and the database of a test class's
 * extensions: {@code acemq.connection.host}, {@code port} (and {@code username}, {@code password} when the broker
 * requires credentials) for its {@link EmbeddedArtemisExtension}, {@code spring.datasource.url} ({@code username},
 * {@code password} when the URL does not carry them) for its {@link PostgresExtension}.
 *
 * <p>A {@code @SpringBootTest} gets them without asking: test-support registers a Spring test
 * {@code ContextCustomizerFactory} (in {@code META-INF/spring.factories}, active only when spring-test is on the
 * class path) that adds them to the test's environment. Call {@link #of(Class)} where that does not fit (a
 * {@code SpringApplicationBuilder} of your own, a {@code @DynamicPropertySource} method).
 *
 * <p>Only class-level extensions count ({@code static} {@code @RegisterExtension} fields or {@code @ExtendWith} on
 * the class), registered while the class's tests run (from their {@code @BeforeAll} on). A class with two broker
 * extensions (an application with two connections) gets no {@code acemq.connection.*} from here: it says which broker
 * is which connection itself.
 */
public final class BootTestProperties {

    /** The class-level extensions of each running test class. */
    private static final Map<Class<?>, List<Object>> ACTIVE = new ConcurrentHashMap<>();

    private BootTestProperties() {
    }

    /**
     * @param testClass a test class whose tests are running (or one of its {@code @Nested} classes)
     * @return its extensions' properties, in order; empty if it has none running
     */
    public static Map<String, String> of(Class<?> testClass) {
        List<EmbeddedArtemisExtension> brokers = new ArrayList<>();
        List<PostgresExtension> databases = new ArrayList<>();
        for (Object e : ACTIVE.getOrDefault(Objects.requireNonNull(testClass, "testClass"), List.of())) {
            if (e instanceof EmbeddedArtemisExtension broker) {
                brokers.add(broker);
            } else if (e instanceof PostgresExtension database) {
                databases.add(database);
            }
        }
        Map<String, String> properties = new LinkedHashMap<>();
        if (brokers.size() == 1) {
            EmbeddedArtemis broker = brokers.get(0).broker();
            properties.put("acemq.connection.host", broker.host());
            properties.put("acemq.connection.port", Integer.toString(broker.port()));
            if (broker.user() != null) {
                properties.put("acemq.connection.username", broker.user());
                properties.put("acemq.connection.password", broker.password() != null ? broker.password() : "");
            }
        }
        if (databases.size() == 1) {
            PostgresSchema schema = databases.get(0).schema();
            properties.put("spring.datasource.url", schema.jdbcUrl());
            if (schema.user() != null) {
                properties.put("spring.datasource.username", schema.user());
            }
            if (schema.password() != null) {
                properties.put("spring.datasource.password", schema.password());
            }
        }
        return properties;
    }

    /**
     * @param testClass a test class
     * @return whether a class-level extension of it is running now (its tests are running)
     */
    public static boolean isActive(Class<?> testClass) {
        return ACTIVE.containsKey(testClass);
    }

    /**
     * Records a class-level extension for the class's tests.
     *
     * @param testClass the test class
     * @param extension the extension
     * @return what forgets it again, to be closed with the class's extension store
     */
    static AutoCloseable register(Class<?> testClass, Object extension) {
        ACTIVE.computeIfAbsent(testClass, k -> new CopyOnWriteArrayList<>()).add(extension);
        return () -> ACTIVE.computeIfPresent(testClass, (k, list) -> {
            list.remove(extension);
            return list.isEmpty() ? null : list;
        });
    }
}
