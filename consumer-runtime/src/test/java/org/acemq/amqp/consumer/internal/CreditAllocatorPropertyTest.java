package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The allocator against a model of the links it serves, under random events: deliveries arriving, being taken and
 * finished, transfers aborted, drains answered, links detached and re-attached, pauses. Whatever happens, the
 * members together never hold more than the budget, none holds more than its window, and the allocator's count
 * matches the model's. And once the adversity stops, every attached member has credit again within a bounded number
 * of steps (each one finishing a delivery or answering a drain): no subscription with demand is starved.
 */
class CreditAllocatorPropertyTest {

    enum Kind { ARRIVE, TAKE, FINISH, ABORT, ANSWER_DRAIN, DETACH, ATTACH, PAUSE, RESUME }

    record Event(Kind kind, int member) {
    }

    /** One member's link as the broker and the client see it. */
    static final class Link implements CreditAllocator.Sink {
        int credit;
        int queued;
        int inHand;
        boolean attached = true;
        boolean drainPending;
        CreditAllocator.Member member;

        @Override
        public void grant(CreditAllocator.Member m, int credits) {
            assertThat(attached).as("a grant goes only to an attached link").isTrue();
            assertThat(drainPending).as("no grant while a drain is out").isFalse();
            credit += credits;
        }

        @Override
        public void drain(CreditAllocator.Member m) {
            drainPending = true;
        }
    }

    @Provide
    Arbitrary<List<Event>> events() {
        return Combinators.combine(Arbitraries.of(Kind.class), Arbitraries.integers().between(0, 3))
                .as(Event::new).list().ofMinSize(1).ofMaxSize(300);
    }

    @Property(tries = 300)
    void neverAboveTheBudgetNorAWindowAndNoMemberIsStarved(
            @ForAll @IntRange(min = 0, max = 12) int budget,
            @ForAll @Size(min = 1, max = 4) List<@IntRange(min = 1, max = 9) Integer> windows,
            @ForAll boolean drains,
            @ForAll("events") List<Event> events) {
        int limit = budget == 0 ? 0 : Math.max(budget, windows.size());
        CreditAllocator allocator = new CreditAllocator(limit);
        List<Link> links = new ArrayList<>();
        for (int i = 0; i < windows.size(); i++) {
            Link l = new Link();
            l.member = allocator.join("m" + i, windows.get(i), l);
            l.member.inHand = () -> l.inHand;
            links.add(l);
        }
        allocator.brokerDrains(drains);
        for (Link l : links) {
            allocator.attached(l.member);
        }
        for (Event e : events) {
            apply(allocator, links.get(e.member() % links.size()), e.kind());
            check(limit, windows, links);
        }
        // The adversity stops: resume, re-attach, answer every drain, finish every delivery. Count the steps.
        allocator.resume();
        for (Link l : links) {
            if (!l.attached) {
                apply(allocator, l, Kind.ATTACH);
            }
        }
        int steps = 0;
        boolean progress = true;
        while (progress) {
            progress = false;
            for (Link l : links) {
                if (l.drainPending) {
                    apply(allocator, l, Kind.ANSWER_DRAIN);
                    progress = true;
                    steps++;
                }
                while (l.queued > 0) {
                    apply(allocator, l, Kind.TAKE);
                }
                if (l.inHand > 0) {
                    apply(allocator, l, Kind.FINISH);
                    progress = true;
                    steps++;
                }
                check(limit, windows, links);
            }
            assertThat(steps).as("bounded").isLessThanOrEqualTo(4 * (limit + windows.stream().mapToInt(w -> w)
                    .sum() + links.size()));
        }
        for (Link l : links) {
            assertThat(l.credit).as("%s has credit once the others have settled", l.member).isPositive();
        }
    }

    private static void apply(CreditAllocator a, Link l, Kind kind) {
        switch (kind) {
            case ARRIVE -> {
                if (l.attached && l.credit > 0) {
                    l.credit--;
                    l.queued++;
                }
            }
            case TAKE -> {
                if (l.queued > 0) {
                    l.queued--;
                    l.inHand++;
                }
            }
            case FINISH -> {
                if (l.inHand > 0) {
                    l.inHand--;
                    a.released(l.member, 1);
                }
            }
            case ABORT -> {
                if (l.attached && l.credit > 0) {
                    l.credit--;
                    a.released(l.member, 1);
                }
            }
            case ANSWER_DRAIN -> {
                if (l.drainPending) {
                    int unused = l.credit;
                    l.credit = 0;
                    l.drainPending = false;
                    a.drained(l.member, unused);
                }
            }
            case DETACH -> {
                if (l.attached) {
                    int unused = l.credit + l.queued;
                    l.credit = 0;
                    l.queued = 0;
                    l.attached = false;
                    l.drainPending = false;
                    a.detached(l.member, unused);
                }
            }
            case ATTACH -> {
                if (!l.attached) {
                    l.attached = true;
                    a.attached(l.member);
                }
            }
            case PAUSE -> a.pause();
            case RESUME -> a.resume();
            default -> throw new IllegalStateException();
        }
    }

    private static void check(int limit, List<Integer> windows, List<Link> links) {
        int total = 0;
        for (int i = 0; i < links.size(); i++) {
            Link l = links.get(i);
            int held = l.credit + l.queued + l.inHand;
            assertThat(l.member.outstanding()).as("allocator count of %s", l.member).isEqualTo(held);
            assertThat(held).as("%s within its window", l.member).isLessThanOrEqualTo(windows.get(i));
            total += held;
        }
        if (limit > 0) {
            assertThat(total).as("all members within the budget").isLessThanOrEqualTo(limit);
        }
    }
}
