/**
 * The in-memory {@link org.acemq.amqp.api.LeasedIdempotencyStore}: one JVM, no persistence, bounded by default.
 * See {@link org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore}.
 */
module org.acemq.amqp.store.inmemory {
    requires transitive org.acemq.amqp.api;

    exports org.acemq.amqp.store.inmemory;
}
