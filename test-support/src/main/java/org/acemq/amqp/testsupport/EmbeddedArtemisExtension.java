package org.acemq.amqp.testsupport;

import java.util.Objects;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * JUnit 5 extension that runs an {@link EmbeddedArtemis} broker (in this JVM, on an ephemeral port of
 * {@code 127.0.0.1}) for the tests of a class, and stops it after them.
 *
 * <p>Register it on a {@code static} field to share one broker among the tests of a class (and of its
 * {@code @Nested} classes), or on an instance field to get a fresh broker for every test:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.withDefaults();
 *
 * @Test
 * void handlesAnOrder() {
 *     ARTEMIS.client().send("orders", AmqpTestClient.message("order-1", "{...}"));
 *     try (AmqpConsumer consumer = AmqpConsumer.builder().broker(ARTEMIS.host(), ARTEMIS.port())...start()) { ... }
 * }
 * }</pre>
 *
 * <p>Configure the broker with {@link #of(EmbeddedArtemis.Builder)}, for example
 * {@code EmbeddedArtemisExtension.of(EmbeddedArtemis.builder().maxDeliveryAttempts(5))}. Declared as
 * {@code @ExtendWith(EmbeddedArtemisExtension.class)} it runs a broker with the defaults of
 * {@link EmbeddedArtemis#builder()} per class.
 *
 * <p>Each extension runs its own broker: two fields on one class are two brokers (for an application with two
 * connections). Parameters can then not be resolved (both extensions offer them): use the fields.
 *
 * <p>Test constructors, lifecycle methods and test methods may declare parameters of type
 * {@link EmbeddedArtemis} (the running broker) and {@link AmqpTestClient} (a client connected to it, closed
 * after the test, or after the class when the parameter belongs to a {@code @BeforeAll} method).
 *
 * <p>The broker and the clients are kept in JUnit's extension store and closed by JUnit when their class (or test)
 * ends, on JUnit Jupiter 5.12 (which Spring Boot 3.5 manages) as on 5.13, 5.14 and 6.x. Tests of one class must not
 * run in parallel with each other when they share a broker through {@link #broker()}: the field names the broker of
 * the test running now.
 */
public final class EmbeddedArtemisExtension implements BeforeAllCallback, BeforeEachCallback, ParameterResolver {

    /** Per extension instance: two extensions registered on one class run two brokers. */
    private final ExtensionContext.Namespace namespace =
            ExtensionContext.Namespace.create(EmbeddedArtemisExtension.class, this);
    private static final String BROKER_KEY = "broker";
    private static final String CLIENT_KEY = "client";
    private static final String REGISTRATION_KEY = "registration";

    private final EmbeddedArtemis.Builder builder;
    private volatile ExtensionContext currentContext;
    private volatile AmqpTestClient currentClient;

    /**
     * An extension with the broker defaults of {@link EmbeddedArtemis#builder()}. Public for
     * {@code @ExtendWith}; in code prefer {@link #withDefaults()}.
     */
    public EmbeddedArtemisExtension() {
        this(EmbeddedArtemis.builder());
    }

    private EmbeddedArtemisExtension(EmbeddedArtemis.Builder builder) {
        this.builder = Objects.requireNonNull(builder, "builder");
    }

    /** @return an extension whose broker has the defaults of {@link EmbeddedArtemis#builder()} */
    public static EmbeddedArtemisExtension withDefaults() {
        return new EmbeddedArtemisExtension();
    }

    /**
     * @param builder the broker's options; {@link EmbeddedArtemis.Builder#build()} is called for every broker the
     *     extension starts (once per class, or once per test for an instance field)
     * @return an extension that starts brokers built by {@code builder}
     */
    public static EmbeddedArtemisExtension of(EmbeddedArtemis.Builder builder) {
        return new EmbeddedArtemisExtension(builder);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        enter(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        enter(context);
    }

    private void enter(ExtensionContext context) {
        brokerFor(context);
        currentContext = context;
        currentClient = null;
        if (context.getTestMethod().isEmpty()) {
            // class level: a Spring Boot test of this class finds the broker (BootTestProperties)
            context.getStore(namespace).put(REGISTRATION_KEY,
                    StoredResource.of(BootTestProperties.register(context.getRequiredTestClass(), this)));
        }
    }

    /**
     * The broker of the running test class or test, also while it is stopped: a test that stops it
     * ({@code broker().stop()}, to see what a client does while the broker is away) starts it again with
     * {@code broker().start()}, on the same port ({@link #port()} keeps answering meanwhile).
     *
     * @return the broker of the running test class or test, running or stopped
     * @throws IllegalStateException outside the tests: before the class's (or, for an instance field, the test's)
     *     broker was started, or after it was closed at the end of them; the message says which
     */
    public EmbeddedArtemis broker() {
        ExtensionContext context = currentContext;
        EmbeddedArtemis broker = context == null ? null
                : StoredResource.unwrap(context.getStore(namespace).get(BROKER_KEY), EmbeddedArtemis.class);
        if (broker == null) {
            throw new IllegalStateException("no embedded broker has been started yet: broker() works inside the tests "
                    + "of the class that registers this extension (from its @BeforeAll or @BeforeEach methods on), "
                    + "not before them");
        }
        if (broker.isClosed()) {
            throw new IllegalStateException("the embedded broker of this extension was closed when its tests ended "
                    + "(after the class, or after the test for an instance field): broker() works only inside them");
        }
        return broker;
    }

    /** @return the broker's host, always {@code 127.0.0.1} */
    public String host() {
        return broker().host();
    }

    /** @return the broker's AMQP port */
    public int port() {
        return broker().port();
    }

    /**
     * A client connected to the broker, opened on first use in each test (or in {@code @BeforeAll}) and closed after
     * that test (or after the class). A client opened before the broker was stopped does not reconnect: after a
     * restart use a client of your own ({@code AmqpTestClient.connect(broker())}).
     *
     * @return the running test's client
     * @throws IllegalStateException if no client was opened yet and the broker is stopped
     */
    public AmqpTestClient client() {
        AmqpTestClient client = currentClient;
        if (client == null) {
            ExtensionContext context = currentContext;
            EmbeddedArtemis broker = broker();
            if (!broker.isRunning()) {
                throw new IllegalStateException("the embedded broker is stopped (a test stopped it): start it again "
                        + "with broker().start() before client()");
            }
            client = AmqpTestClient.connect(broker);
            context.getStore(namespace).put(CLIENT_KEY, StoredResource.of(client));
            currentClient = client;
        }
        return client;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == EmbeddedArtemis.class || type == AmqpTestClient.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        EmbeddedArtemis broker = brokerFor(context);
        Class<?> type = parameter.getParameter().getType();
        if (type == EmbeddedArtemis.class) {
            return broker;
        }
        if (type == AmqpTestClient.class) {
            // one client per parameter, closed with the context that asked for it (the test, or the class)
            return StoredResource.unwrap(context.getStore(namespace).getOrComputeIfAbsent(parameter,
                    k -> StoredResource.of(AmqpTestClient.connect(broker))), AmqpTestClient.class);
        }
        throw new ParameterResolutionException("EmbeddedArtemisExtension cannot resolve " + type.getName());
    }

    private EmbeddedArtemis brokerFor(ExtensionContext context) {
        // looks in this context's store and its ancestors': a class-level broker serves its tests and nested classes
        return StoredResource.unwrap(context.getStore(namespace).getOrComputeIfAbsent(BROKER_KEY,
                k -> StoredResource.of(builder.build().start())), EmbeddedArtemis.class);
    }
}
