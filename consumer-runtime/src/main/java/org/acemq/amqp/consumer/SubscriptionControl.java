package org.acemq.amqp.consumer;

import java.time.Duration;
import org.acemq.amqp.consumer.internal.ConsumerRuntime;

/**
 * Stops, starts, pauses and resumes one subscription of a running {@link AmqpConsumer}, while the consumer and its
 * other subscriptions go on. Obtained from {@link AmqpConsumer#subscription(String)}.
 *
 * <ul>
 *   <li>{@link #pause()}: no more link credit is granted, and the credit the broker still holds is taken back (a
 *       drain, where the broker answers drains per spec; RabbitMQ 3.x does not, and may still send what it holds).
 *       The link stays attached; deliveries already received are handled and settled as usual. {@link #resume()}
 *       grants credit again. This is what the consumer does for all subscriptions while its store is unreachable; a
 *       subscription paused here stays paused when the store comes back.</li>
 *   <li>{@link #stop()}: pauses, releases the deliveries received or claimed but not started (their claims too, as
 *       {@link AmqpConsumer#close()} does), waits for running handlers and settles them, then detaches the link.
 *       {@link #start()} attaches a new link (retried with back-off while the broker refuses it or the connection is
 *       down). Only {@link AcknowledgementMode#AT_LEAST_ONCE} subscriptions can be stopped: an at-most-once delivery
 *       cannot go back, and a transactional one belongs to a transaction of the session; pause those instead.</li>
 * </ul>
 *
 * <p>A stopped or paused subscription stays so across reconnects. Every method is idempotent and thread-safe; none may
 * be called from the subscription's own handler ({@link #stop()} would wait for itself).
 */
public final class SubscriptionControl {

    private final ConsumerRuntime runtime;
    private final String name;

    SubscriptionControl(ConsumerRuntime runtime, String name) {
        this.runtime = runtime;
        this.name = name;
    }

    /** @return the subscription's name */
    public String name() {
        return name;
    }

    /** Stops granting credit and takes back what the broker holds; the link stays attached. */
    public void pause() {
        runtime.pause(name);
    }

    /** Grants credit again after {@link #pause()}. */
    public void resume() {
        runtime.resume(name);
    }

    /** @return whether the subscription is paused (by {@link #pause()}; not by a store outage) */
    public boolean isPaused() {
        return runtime.paused(name);
    }

    /**
     * Stops the subscription, waiting for running handlers at most the consumer's shutdown timeout
     * ({@link AmqpConsumer.Builder#shutdownTimeout(Duration)}).
     *
     * @return whether every running handler finished in time
     * @throws UnsupportedOperationException if the subscription is not {@link AcknowledgementMode#AT_LEAST_ONCE}
     */
    public boolean stop() {
        return runtime.suspend(name, runtime.shutdownTimeout());
    }

    /**
     * Stops the subscription. Handlers still running after {@code timeout} are not interrupted, but the link is
     * detached: the broker gets their deliveries back, and the store absorbs the copies as after a lost link.
     *
     * @param timeout how long to wait for running handlers
     * @return whether every running handler finished in time
     * @throws UnsupportedOperationException if the subscription is not {@link AcknowledgementMode#AT_LEAST_ONCE}
     */
    public boolean stop(Duration timeout) {
        return runtime.suspend(name, Validation.notNegative("timeout", timeout));
    }

    /** Attaches the subscription again after {@link #stop()}; returns at once (the attach runs in the background). */
    public void start() {
        runtime.unsuspend(name);
    }

    /** @return whether the subscription was stopped by {@link #stop()} and not started since */
    public boolean isStopped() {
        return runtime.suspended(name);
    }

    @Override
    public String toString() {
        return "SubscriptionControl[" + name + (isStopped() ? ", stopped" : "") + (isPaused() ? ", paused" : "") + "]";
    }
}
