/**
 * The contract test kit every AceMQ idempotency store must pass: {@link org.acemq.amqp.testkit.IdempotencyStoreContract}
 * (JUnit 5 tests plus a jqwik model-based property) and a {@link org.acemq.amqp.testkit.MutableClock} for stores
 * whose time is an injected {@link java.time.Clock}.
 *
 * <p>The module is {@code open} because the JUnit and jqwik engines instantiate and call the contract's test and
 * lifecycle methods reflectively.
 */
open module org.acemq.amqp.testkit {
    requires transitive org.acemq.amqp.api;
    requires transitive org.junit.jupiter.api;
    requires transitive net.jqwik.api;
    requires org.assertj.core;

    exports org.acemq.amqp.testkit;
}
