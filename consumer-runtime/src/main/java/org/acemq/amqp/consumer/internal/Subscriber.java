package org.acemq.amqp.consumer.internal;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.acemq.amqp.consumer.AcknowledgementMode;
import org.acemq.amqp.consumer.ConsumerHealth.SubscriptionHealth;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription's lifecycle over its {@link Pipeline}: starting its handler threads, pause and resume (credit),
 * stop and start by the application, the consumer's shutdown, and its health.
 */
final class Subscriber {

    private static final Logger LOG = LoggerFactory.getLogger(Subscriber.class);
    private static final long FINAL_DRAIN_MILLIS = 5_000;

    final String name;
    private final Subscription spec;
    private final Pipeline pipeline;
    private final LinkKeeper links;
    private final HandlerThreads threads;
    private final CreditAllocator allocator;
    private final CurrentBroker broker;
    private final Ticker ticker;
    private final Duration requestTimeout;
    private final Object lifecycle = new Object();
    private volatile boolean paused;

    Subscriber(Subscription spec, Pipeline pipeline, CreditAllocator allocator, CurrentBroker broker, Ticker ticker,
               Duration requestTimeout) {
        this.name = spec.name();
        this.spec = spec;
        this.pipeline = pipeline;
        this.links = pipeline.links;
        this.threads = pipeline.threads;
        this.allocator = allocator;
        this.broker = broker;
        this.ticker = ticker;
        this.requestTimeout = requestTimeout;
    }

    /**
     * Starts the handler threads; they wait for a link.
     *
     * @param consumer the consumer's name (the threads' names start with it)
     * @param executor the application's executor for handlers, or null for threads of our own
     */
    void startThreads(String consumer, Executor executor) {
        threads.start(consumer + "-" + name + "-worker-", executor);
    }

    Pipeline pipeline() {
        return pipeline;
    }

    /**
     * The connection is gone and the consumer opens a new one by itself (a token credential): the link ends (its
     * unused credit goes back to the budget, deliveries in hand can no longer be settled), and the handler threads
     * wait until the new connection attaches a new one.
     */
    void connectionLost() {
        pipeline.settlement.connectionInterrupted();
        ReceiverLink l = links.currentLink();
        if (l != null) {
            links.credit().detached(l);
        }
    }

    LinkKeeper links() {
        return links;
    }

    // ------------------------------------------------------------------ application lifecycle

    /** @return whether the application paused this subscription */
    boolean paused() {
        return paused;
    }

    /** @return whether the application stopped this subscription */
    boolean suspended() {
        return links.suspended();
    }

    /**
     * The application pauses this subscription: no more credit, and the link's unused credit is taken back (drained,
     * where the broker answers drains per spec); deliveries already received are handled as usual.
     */
    void pause() {
        synchronized (lifecycle) {
            if (links.stopping() || paused) {
                return;
            }
            paused = true;
            allocator.pause(links.credit().member());
            LOG.info("Subscription '{}' on '{}' paused", name, spec.address());
        }
    }

    /** The application resumes this subscription: credit is granted again. */
    void resume() {
        synchronized (lifecycle) {
            if (links.stopping() || !paused) {
                return;
            }
            paused = false;
            allocator.resume(links.credit().member());
            LOG.info("Subscription '{}' on '{}' resumed", name, spec.address());
        }
    }

    /**
     * The application stops this subscription: no more credit (drained where the broker answers drains per spec),
     * deliveries received or admitted but not started are released (their claims too), running handlers finish and
     * are settled, then the link is detached. The consumer and its other subscriptions go on.
     *
     * @param timeout how long to wait for running handlers
     * @return whether every handler finished in time (if not, the link is detached anyway: the broker gets their
     *     deliveries back, and their copies are absorbed by the store as after a lost link)
     */
    boolean suspend(Duration timeout) {
        synchronized (lifecycle) {
            if (links.stopping() || links.suspended()) {
                return true;
            }
            if (spec.acknowledgementMode() != AcknowledgementMode.AT_LEAST_ONCE) {
                throw new UnsupportedOperationException("Subscription '" + name + "' is "
                        + spec.acknowledgementMode() + ": only an AT_LEAST_ONCE subscription can be stopped and "
                        + "started again while the consumer runs; pause() it instead, or close the consumer");
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            links.suspend();
            CompletableFuture<Void> drained = links.credit().pause();
            pipeline.wakeReceivers();
            ReceiverLink l = links.currentLink();
            if (l != null && l.isValid() && broker.profile().drainPerSpec()) {
                await(drained, "Drain of '{}' before its stop was not answered: {}");
            }
            pipeline.releaseLeft(valid(l)); // admitted (claimed) and not started, then what the client holds
            boolean done = pipeline.awaitIdle(deadline);
            pipeline.holds.settleAll();
            l = links.currentLink();
            pipeline.releaseLeft(valid(l)); // what a broker that ignores drains sent meanwhile
            if (l != null && links.credit().detached(l)) {
                closeReceiver(l);
            }
            LOG.info("Subscription '{}' on '{}' stopped{}", name, spec.address(),
                    done ? "" : " (some handlers were still running; their deliveries went back to the broker)");
            return done;
        }
    }

    /**
     * The application starts this subscription again after {@link #suspend}: attaches a new link (in the background,
     * with back-off, if the broker refuses it or the connection is down) and grants credit unless paused.
     */
    void unsuspend() {
        synchronized (lifecycle) {
            if (links.stopping() || !links.suspended()) {
                return;
            }
            if (!paused) {
                allocator.resume(links.credit().member());
            }
            LOG.info("Subscription '{}' on '{}' starting again", name, spec.address());
            links.unsuspend();
        }
    }

    // ------------------------------------------------------------------ the consumer's shutdown

    /** Stops taking deliveries, drains the link, and releases every delivery received but not started. */
    void stopIntake() {
        links.stop();
        allocator.leave(links.credit().member());
        pipeline.wakeReceivers();
        ReceiverLink l = links.currentLink();
        boolean release = !pipeline.policy.handlesLeftAtShutdown(); // else the threads handle them as they stop
        if (l == null || !l.isValid()) {
            if (release) {
                pipeline.releaseLeft(null);
            }
            return;
        }
        if (broker.profile().drainPerSpec()) {
            // Bounded separately from the request timeout: a broker that ignores the drain must not hold up
            // shutdown for long; what arrives meanwhile is released below either way.
            await(links.credit().drainNow(), "Final drain of '{}' was not answered: {}");
        }
        if (release) {
            pipeline.releaseLeft(l);
        }
    }

    /** @return whether every handler finished before the deadline */
    boolean awaitHandlers(long deadlineNanos) {
        boolean done = threads.await(deadlineNanos);
        ReceiverLink l = links.currentLink();
        if (l != null && l.isValid() && !pipeline.policy.handlesLeftAtShutdown()) {
            // A broker that is not drained (it answers drains against the spec) may use the credit it still holds
            // while the handlers finish: release what arrived meanwhile with a disposition of ours, reported like the
            // rest, instead of leaving it to the detach, where nobody would count it.
            pipeline.releaseLeft(l);
        }
        pipeline.holds.settleAll();
        pipeline.settlement.stop();
        return done;
    }

    /** Detaches the current link for good (the consumer closes) and interrupts handlers still running. */
    void closeLink() {
        ReceiverLink l = links.currentLink();
        if (l != null) {
            l.invalidate(ReceiverLink.End.DETACHED);
            closeReceiver(l);
        }
        threads.interruptAll();
    }

    private void closeReceiver(ReceiverLink l) {
        try {
            l.receiver.close();
        } catch (RuntimeException e) {
            LOG.debug("Closing receiver of '{}' failed: {}", name, Errors.describe(e));
        }
    }

    /** @return the deliveries the client holds for the current link, not taken yet (0 without a valid link) */
    private static long queued(ReceiverLink l) {
        if (l == null || !l.isValid()) {
            return 0;
        }
        try {
            return l.receiver.queuedDeliveries();
        } catch (org.apache.qpid.protonj2.client.exceptions.ClientException | RuntimeException e) {
            return 0; // link closing
        }
    }

    private void await(CompletableFuture<Void> drained, String unanswered) {
        try {
            drained.get(Math.min(requestTimeout.toMillis(), FINAL_DRAIN_MILLIS), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.debug(unanswered, name, Errors.describe(e));
        }
    }

    private static ReceiverLink valid(ReceiverLink l) {
        return l != null && l.isValid() ? l : null;
    }

    SubscriptionHealth health(boolean connected) {
        ReceiverLink l = links.currentLink();
        long queued = queued(l);
        LinkCredit credit = links.credit();
        int inFlight = (int) Math.min(Integer.MAX_VALUE, credit.inHand() + queued);
        int unused = Math.max(0, credit.member().outstanding() - inFlight);
        long now = ticker.read();
        boolean attached = l != null && l.attached() && !links.stopping() && connected;
        return new SubscriptionHealth(name, spec.address(), attached, inFlight, unused,
                Duration.ofNanos(Math.max(pipeline.oldest(now), pipeline.holds.oldest(now))),
                Duration.ofNanos(pipeline.oldestClaim(now)), links.suspended());
    }

    String lastError() {
        return links.lastError();
    }
}
