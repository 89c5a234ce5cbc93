package org.acemq.amqp.consumer.internal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.acemq.amqp.consumer.Subscription;
import org.acemq.amqp.consumer.Ticker;
import org.acemq.amqp.consumer.internal.engine.ProtonInternals;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription's path for a delivery, as one object: {@link #step} is what each of its handler threads does, and
 * reads as the path itself, stage by stage, in order: take, read, claim, decide, schedule, run, send, end, settle.
 * Each stage is a small object with one job, handed its collaborators here, that returns what it found (facts) or
 * what happens next (a {@link Verdict} from {@link OutcomePolicy}); none calls back up the line. The processing mode
 * is the {@link Schedule}: which admitted work runs next. docs/runtime.md draws it.
 *
 * <p>Threads: the subscription has {@code concurrency} handler threads ({@link HandlerThreads}) and none of its own.
 * Whichever thread finds nothing to run takes the next batch from the client and admits it (one store call for the
 * batch); whichever thread finds no store call in flight ends the claims waiting (one call for many). Shutdown is not a
 * second path: what is left goes through the same stages with facts that say the subscription stops ({@link #drain}).
 */
final class Pipeline {

    private static final Logger LOG = LoggerFactory.getLogger(Pipeline.class);

    final OutcomePolicy policy;
    final Settlement settlement;
    final Holds holds;
    final LinkKeeper links;
    final HandlerThreads threads;

    private final String name;
    private final Schedule schedule;
    private final Intake intake;
    private final Reader reader;
    private final StoreClaims claims;
    private final Verdicts verdicts;
    private final Runner runner;
    private final Sends sends;
    private final Endings endings;
    private final StoreGate gate;
    private final BooleanSupplier quiet;
    private final Supplier<ReceiverLink> currentLink;

    /**
     * Wires one subscription's pipeline: each stage gets exactly the collaborators it uses.
     *
     * @param leasePeriodNanos the store's lease renewal period, 0 if it has no leases
     * @param connectionLost told when a receive finds the connection gone for good
     */
    static Pipeline create(Subscription spec, RuntimeConfig config, SessionHandle sessions, SafeObserver observer,
                           StoreAccess store, StoreGate gate, CreditAllocator allocator, Control control,
                           CurrentBroker broker, ProtonInternals internals, Sends sends, long leasePeriodNanos,
                           Consumer<Throwable> connectionLost) {
        String name = spec.name();
        Ticker ticker = config.ticker();
        long beatNanos = spec.renewLeases() ? leasePeriodNanos : 0;
        OutcomePolicy policy = new OutcomePolicy(spec, config.storeFailurePolicy());
        Holds holds = new Holds(control.scheduler());
        Settlement.Report report = new Settlement.Report(name, observer, allocator);
        Settlement settlement = switch (spec.acknowledgementMode()) {
            case AT_LEAST_ONCE -> new DirectSettlement(report);
            case AT_MOST_ONCE -> new PreSettledSettlement(report);
            case TRANSACTIONAL -> new TransactionalSettlement(report, policy, ticker, spec.transactionBatchSize(),
                    spec.transactionBatchTime(), store, config.connection().requestTimeout());
        };
        LinkKeeper links = new LinkKeeper(spec, sessions, config.connection(), allocator, control, broker, internals,
                observer, settlement, policy, connectionLost);
        Keys keys = new Keys(spec, config.scopePrefix());
        LOG.info("Subscription '{}' on '{}': keys from {} in scope '{}', fingerprint {}", name, spec.address(),
                spec.keySource(), LogSafe.id(keys.scope()), spec.fingerprint());

        long horizonNanos = Intake.horizonNanos(beatNanos);
        HandlerTimes times = new HandlerTimes(horizonNanos); // until handlers are timed: one delivery per thread
        Schedule schedule;
        if (spec.orderBy().isPresent()) {
            schedule = new KeyOrder(links::stopping, ticker, spec.keyBacklog(), spec.parkedLimit(),
                    spec.parkedBytes(), d -> d.finish(allocator));
        } else if (spec.batchHandler().isPresent()) {
            schedule = new Batches(links::stopping, ticker, spec.batchSize(), spec.batchTime().toNanos());
        } else {
            schedule = new ArrivalOrder(links::stopping, ticker);
        }
        int minimum = spec.batchHandler().isPresent() ? spec.batchSize() : 1;
        Intake intake = new Intake(spec.concurrency(), spec.prefetch(), minimum, links, times, ticker, horizonNanos);
        Reader reader = new Reader(name, spec.address(), keys);
        StoreClaims claims = new StoreClaims(name, store, gate, observer, ticker, beatNanos, keys.fingerprints());
        Runner runner = new Runner(name, spec.handler(), spec.batchHandler().orElse(null), observer, ticker, broker,
                () -> ThreadLocalRandom.current().nextDouble(), times);
        Endings endings = new Endings(name, policy, store, gate, settlement, holds, ticker, control.scheduler(),
                config.confirmTimeout(), links::quiet, beatNanos, schedule::again);
        return new Pipeline(spec, policy, settlement, holds, links, schedule, intake, reader, claims, runner, sends,
                endings, gate, links::quiet, links::currentLink);
    }

    /**
     * @param quiet whether the subscription stops (the consumer closes, or the application stopped it)
     * @param currentLink the subscription's link now (what an at-most-once thread handles before it stops)
     */
    Pipeline(Subscription spec, OutcomePolicy policy, Settlement settlement, Holds holds, LinkKeeper links,
             Schedule schedule, Intake intake, Reader reader, StoreClaims claims, Runner runner, Sends sends,
             Endings endings, StoreGate gate, BooleanSupplier quiet, Supplier<ReceiverLink> currentLink) {
        this.name = spec.name();
        this.policy = policy;
        this.settlement = settlement;
        this.holds = holds;
        this.links = links;
        this.schedule = schedule;
        this.intake = intake;
        this.reader = reader;
        this.claims = claims;
        this.verdicts = new Verdicts(spec, policy);
        this.runner = runner;
        this.sends = sends;
        this.endings = endings;
        this.gate = gate;
        this.quiet = quiet;
        this.currentLink = currentLink;
        this.threads = new HandlerThreads(name, spec.concurrency(), this::step, this::drainLeftAtShutdown,
                policy.handlesLeftAtShutdown());
    }

    // ------------------------------------------------------------------ the path

    /**
     * What a handler thread does, again and again: the whole path of a delivery, in order.
     *
     * @return false once the subscription stops and nothing is left for this thread to run
     */
    boolean step(HandlerSlot slot) {
        List<Delivery> work = schedule.next();          // the admitted work the processing mode lets run next
        if (work == null) {
            return false;                               // the subscription stops
        }
        if (work == Schedule.LEAD) {                    // nothing to run, and nobody takes from the client: this thread
            lead(slot);                                 // 1. take, 2. read, 3. claim, 4. decide, 5. schedule
            return true;
        }
        slot.current = work;
        try {
            if (runner.batches()) {
                runBatch(work);                         // 6-9 for a batch: one handler call
            } else {
                run(work.get(0));                       // 6. run, 7. send, 8. end the claim, 9. settle
            }
        } finally {
            slot.current = null;
            schedule.done(work);
        }
        return true;
    }

    /**
     * Steps 1-5, on the thread the schedule made the intake leader: takes what the client has (waiting for one),
     * admits it, and hands the admitted deliveries to the schedule, where they wait for a thread.
     */
    void lead(HandlerSlot slot) {
        List<Delivery> admitted = List.of();
        try {
            List<Arrival> taken = intake.take(slot, schedule.idleThreads(), schedule.waitingHint(),
                    schedule.leadNanos());                                                               // 1. take
            if (!taken.isEmpty()) {
                schedule.admitting();
            }
            admitted = admit(taken);                    // 2. read, 3. claim, 4. decide (the rest is settled at once)
        } catch (RuntimeException | Error e) {
            LOG.error("Subscription '{}': taking deliveries failed", name, e);
        } finally {
            schedule.led(admitted);                     // 5. the admitted wait for a thread (the processing mode)
        }
    }

    /**
     * Steps 2-4 for a batch taken together: reads each delivery, claims the keys of those the policy sends to the
     * store with one store call, and ends those decided already (bad input, duplicates, in-progress copies, poison, a
     * store that is down). A key that appears twice in the batch is claimed once here; its later copy is claimed when
     * a thread starts it, so that at concurrency 1 it finds the first copy confirmed (a duplicate), as it would one at
     * a time.
     *
     * @param taken what the intake took, in the order received
     * @return the admitted deliveries, whose handlers are to run, in the order received
     */
    List<Delivery> admit(List<Arrival> taken) {
        int n = taken.size();
        List<Delivery> batch = new ArrayList<>(n);
        List<Delivery> toClaim = new ArrayList<>(n);
        Set<String> keys = n > 1 ? new HashSet<>(n * 2) : null;
        for (Arrival a : taken) {
            Delivery d = null;
            try {
                d = new Delivery(reader.read(a));                                   // 2. read
                batch.add(d);
                d.facts = DeliveryFacts.received(quiet.getAsBoolean(), d.arrival.decodeError(), d.key() != null,
                        gate.paused(), d.arrival.orderKey() != null);
                Verdict v = verdicts.decide(d, d.facts);
                if (v.action() != Verdict.Action.CLAIM) {
                    verdicts.log(d, v);
                    d.completed(endings.settle(d, v));                              //    bad input: settled now
                } else if (keys != null && !keys.add(d.key())) {
                    d.claimAtStart = true;
                } else {
                    toClaim.add(d);
                }
            } catch (RuntimeException | Error e) {
                endings.failed(d != null ? d : new Delivery(a), e);
            }
        }
        if (!toClaim.isEmpty()) {
            try {
                claims.claim(toClaim);                                              // 3. claim: one store call
            } catch (RuntimeException | Error e) {
                for (Delivery d : toClaim) {
                    endings.failed(d, e);
                }
            }
        }
        List<Delivery> admitted = new ArrayList<>(batch.size());
        boolean handedOver = false;
        for (Delivery d : batch) {
            try {
                if (d.claimAtStart) {
                    d.moveTo(Delivery.State.ADMITTED);
                    admitted.add(d);
                    continue;
                }
                if (d.state() != Delivery.State.RECEIVED || d.facts.stage() != DeliveryFacts.Stage.CLAIMED) {
                    continue; // settled above
                }
                Verdict v = verdicts.decide(d, d.facts);                            // 4. decide on the answer
                if (v.action() == Verdict.Action.RUN) {
                    d.moveTo(Delivery.State.ADMITTED);
                    admitted.add(d);
                } else {
                    verdicts.log(d, v);
                    if (v == Verdict.DUPLICATE) {
                        sends.duplicate(d);                                         //    its outbox, if left
                    }
                    handedOver |= endings.end(d, v, false);                         //    duplicates, poison, ...
                }
            } catch (RuntimeException | Error e) {
                endings.failed(d, e);
            }
        }
        if (handedOver) {
            endings.drive();
        }
        return admitted;
    }

    /**
     * Steps 6-9 for one admitted delivery, on a handler thread: decides again with what changed while it waited (the
     * subscription stopping, its link gone: then its claim is released and the handler does not run), claims it if it
     * was left to claim at start, runs the handler, sends what the handler sent, and hands the verdict to the end
     * stage. The thread waits for the settlement only when it must close an observer scope or trace context with the
     * outcome; otherwise it goes on to its next delivery at once.
     *
     * @param d an admitted delivery ({@link Delivery.State#ADMITTED})
     */
    void run(Delivery d) {
        Verdict verdict = null;
        boolean handedOver = false;
        Delivery.State before = null;
        try {
            d.moveTo(Delivery.State.RUNNING);
            verdict = decideAgain(d);
            if (verdict == Verdict.DUPLICATE) {
                sends.duplicate(d);                                                 //    its outbox, if left
            }
            if (verdict.action() == Verdict.Action.RUN) {
                d.facts = runner.run(d);                                            // 6. run the handler
                d.facts = sends.send(d, d.facts);                                   // 7. send what it sent
                verdict = verdicts.decide(d, d.facts);
            }
            verdicts.log(d, verdict);
            if (verdict.action() == Verdict.Action.RETRY) {
                d.retryPending = true; // its key stays taken until it ran again (KeyOrder)
            }
            handedOver = true;
            before = d.state();
            endings.end(d, verdict, true);                                          // 8. end the claim, 9. settle
        } catch (RuntimeException | Error e) {
            if (handedOver && d.state() != before) {
                throw e; // the end stage took it (another thread may be settling it): not ours to settle again
            }
            verdict = endings.failed(d, e);
        } finally {
            DeliveryScope scope = d.scope;
            if (scope != null) {
                d.scope = null;
                boolean settled = d.completed && d.sent && verdict != null;
                scope.close(settled ? verdict.outcome() : null, settled ? verdict.reason() : null);
            }
        }
    }

    /**
     * Steps 6-9 for a batch handler's batch: decides each delivery again (what the policy settles without running goes
     * on at once), runs the handler once for the rest, sends what each sent, and hands every verdict to the end stage
     * together (one confirm call and one release call for the batch).
     */
    void runBatch(List<Delivery> batch) {
        List<Delivery> runnable = new ArrayList<>(batch.size());
        for (Delivery d : batch) {
            try {
                d.moveTo(Delivery.State.RUNNING);
                Verdict v = decideAgain(d);
                if (v.action() == Verdict.Action.RUN) {
                    runnable.add(d);
                    continue;
                }
                verdicts.log(d, v);
                if (v == Verdict.DUPLICATE) {
                    sends.duplicate(d);
                }
                endings.end(d, v, false);
            } catch (RuntimeException | Error e) {
                endings.failed(d, e);
            }
        }
        if (!runnable.isEmpty()) {
            try {
                runner.runBatch(runnable);                                          // 6. run the handler, once
            } catch (RuntimeException | Error e) {
                for (Delivery d : runnable) {
                    endings.failed(d, e);
                }
                runnable = List.of();
            }
        }
        for (Delivery d : runnable) {
            try {
                d.facts = sends.send(d, d.facts);                                   // 7. send what each sent
                Verdict v = verdicts.decide(d, d.facts);
                verdicts.log(d, v);
                endings.end(d, v, false);                                           // 8. end the claims together
            } catch (RuntimeException | Error e) {
                endings.failed(d, e);
            }
        }
        endings.drive();                                                            // 9. ... and settle
    }

    /** What changed while the delivery waited for a thread; a key left to claim at start is claimed now. */
    private Verdict decideAgain(Delivery d) {
        boolean claimNow = d.claimAtStart;
        d.claimAtStart = false;
        d.facts = d.facts.waited(quiet.getAsBoolean(), !d.live());
        Verdict verdict = verdicts.decide(d, d.facts);
        if (claimNow && verdict.action() == Verdict.Action.CLAIM) { // a key that was not claimed with its batch
            claims.claim(List.of(d));
            verdict = verdicts.decide(d, d.facts.waited(quiet.getAsBoolean(), !d.live()));
        }
        return verdict;
    }

    // ------------------------------------------------------------------ shutdown: the same path, stopping

    /**
     * Ends the deliveries left when the subscription stops, through the same stages with facts that say so (the
     * policy releases them, claims released first, or for an at-most-once subscription runs them): first those
     * admitted and not started (their claims ended together, in one store call), then those the client holds for
     * {@code link}, taken without waiting for more.
     *
     * @param admitted admitted deliveries no thread started, removed from the schedule
     * @param link the link whose queued deliveries are taken, or null for none
     * @param slot the slot of the thread doing it (health and the lease heartbeat see what it runs)
     */
    void drain(List<Delivery> admitted, ReceiverLink link, HandlerSlot slot) {
        boolean handedOver = false;
        for (Delivery d : admitted) {
            try {
                d.facts = d.facts.waited(quiet.getAsBoolean(), !d.live());
                Verdict v = verdicts.decide(d, d.facts);
                if (!v.settles()) {
                    run(d);
                    continue;
                }
                verdicts.log(d, v);
                handedOver |= endings.end(d, v, false);
            } catch (RuntimeException | Error e) {
                endings.failed(d, e);
            }
        }
        if (handedOver) {
            endings.drive();
        }
        if (link != null) {
            takeQueued(link, slot);
        }
    }

    private void takeQueued(ReceiverLink link, HandlerSlot slot) {
        try {
            org.apache.qpid.protonj2.client.Delivery amqp;
            while ((amqp = link.receiver.tryReceive()) != null) {
                List<Delivery> left = admit(List.of(intake.take(link, amqp)));
                slot.current = left;
                try {
                    for (Delivery d : left) {
                        run(d);
                    }
                } catch (RuntimeException | Error e) {
                    LOG.error("Subscription '{}': a delivery could not be processed or settled", name, e);
                } finally {
                    slot.current = null;
                }
            }
        } catch (ClientException e) {
            LOG.debug("Taking the deliveries left in '{}' failed: {}", name, Errors.describe(e));
        }
    }

    /** At-most-once: a handler thread that stops handles what the client still holds (it cannot go back). */
    private void drainLeftAtShutdown(HandlerSlot slot) {
        drain(List.of(), currentLink.get(), slot);
    }

    /**
     * On the closing thread: admitted deliveries no thread started, then what the client holds for {@code link}, go
     * through the shutdown path.
     *
     * @param link the link whose queued deliveries are taken too, or null
     */
    void releaseLeft(ReceiverLink link) {
        drain(schedule.drain(), link, new HandlerSlot());
    }

    // ------------------------------------------------------------------ what the subscription holds

    /** Wakes every thread blocked in {@code receive()} or waiting for work. */
    void wakeReceivers() {
        threads.wakeReceivers();
        schedule.wakeAll();
    }

    /** Calls {@code action} for every delivery a thread runs, that waits admitted, or whose claim waits to be ended. */
    void forEachHeld(Consumer<Delivery> action) {
        threads.forEachRunning(action);
        schedule.forEachWaiting(action);
        endings.forEachEnding(action);
    }

    /**
     * Waits until no thread runs a delivery and none waits admitted or is being admitted (the subscription was
     * stopped by the application: nothing new is taken).
     *
     * @return whether that happened before the deadline
     */
    boolean awaitIdle(long deadlineNanos) {
        return threads.awaitIdle(deadlineNanos, schedule::busy);
    }

    /** @return how long the oldest delivery a thread holds (running or admitted) has been held, in nanoseconds */
    long oldest(long now) {
        long[] oldest = {0};
        forEachHeld(d -> oldest[0] = Math.max(oldest[0], now - d.arrival.receivedNanos()));
        return oldest[0];
    }

    /** @return how long the oldest claim held (running or admitted) has been held, in nanoseconds */
    long oldestClaim(long now) {
        long[] oldest = {0};
        forEachHeld(d -> {
            long claimed = d.claimedNanos;
            if (claimed != 0) {
                oldest[0] = Math.max(oldest[0], now - claimed);
            }
        });
        return oldest[0];
    }
}
