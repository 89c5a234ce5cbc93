package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The credit allocator as a state machine: events in, grants and drains out (recorded by the sink). */
class CreditAllocatorTest {

    /** Records what the allocator asks for; holds each member's in-hand count. */
    static final class Recorder implements CreditAllocator.Sink {
        final List<String> events = new ArrayList<>();
        int inHand;

        @Override
        public void grant(CreditAllocator.Member member, int credits) {
            events.add(member.name + "+" + credits);
        }

        @Override
        public void drain(CreditAllocator.Member member) {
            events.add(member.name + " drain");
        }

        List<String> take() {
            List<String> copy = List.copyOf(events);
            events.clear();
            return copy;
        }
    }

    private static CreditAllocator.Member join(CreditAllocator a, String name, int window, Recorder r) {
        CreditAllocator.Member m = a.join(name, window, r);
        m.inHand = () -> r.inHand;
        return m;
    }

    @Test
    void withoutABudgetEachMemberGetsItsWindowAndFreedSlotsComeBackInBatches() {
        CreditAllocator a = new CreditAllocator(0);
        Recorder r = new Recorder();
        CreditAllocator.Member m = join(a, "a", 8, r);
        a.attached(m);
        assertThat(r.take()).containsExactly("a+8");
        r.inHand = 8; // all of it arrived and is being handled
        a.released(m, 1);
        r.inHand = 7;
        assertThat(r.take()).as("1 free slot, nothing unused: granted at once (no credit left to work with)")
                .containsExactly("a+1");
        r.inHand = 6;
        a.released(m, 1);
        assertThat(r.take()).as("1 free slot and unused credit: wait for a batch of 8/4").isEmpty();
        r.inHand = 5;
        a.released(m, 1);
        assertThat(r.take()).containsExactly("a+2");
        assertThat(m.outstanding()).isEqualTo(8);
    }

    @Test
    void aSharedBudgetIsSplitIntoFairSharesFromTheStartNotGrabbedByTheFirstToAttach() {
        CreditAllocator a = new CreditAllocator(10);
        Recorder r = new Recorder();
        CreditAllocator.Member x = join(a, "x", 101, r);
        CreditAllocator.Member y = join(a, "y", 101, r);
        a.attached(x);
        assertThat(r.take()).as("y is still attaching: its share is kept for it").containsExactly("x+5");
        a.attached(y);
        assertThat(r.take()).containsExactly("y+5");
        r.inHand = 0;
        a.released(x, 5); // say a drain took x's credit back
        assertThat(r.take()).containsExactly("x+5");
    }

    @Test
    void whatOneMemberCannotUseGoesToTheOthers() {
        CreditAllocator a = new CreditAllocator(10);
        Recorder r = new Recorder();
        CreditAllocator.Member small = join(a, "small", 2, r);
        CreditAllocator.Member big = join(a, "big", 100, r);
        CreditAllocator.Member mid = join(a, "mid", 100, r);
        a.attached(small);
        a.attached(big);
        a.attached(mid);
        assertThat(r.take()).containsExactly("small+2", "big+4", "mid+4");
        assertThat(small.target() + big.target() + mid.target()).isEqualTo(10);
    }

    @Test
    void capacityFreedByOneMemberWakesEveryMemberBelowItsShare() {
        CreditAllocator a = new CreditAllocator(4);
        Recorder r = new Recorder();
        CreditAllocator.Member x = join(a, "x", 4, r);
        CreditAllocator.Member y = join(a, "y", 4, r);
        a.attached(x);
        a.attached(y);
        r.take();
        r.inHand = 2;
        // y lost its link with its 2 credits (detach): with lending off its share stays reserved
        a.detached(y, 2);
        assertThat(r.take()).isEmpty();
        a.attached(y);
        assertThat(r.take()).as("y's share granted again on its own re-attach").containsExactly("y+2");
        r.inHand = 0;
        a.released(x, 2);
        assertThat(r.take()).containsExactly("x+2");
    }

    @Test
    void whereDrainsWorkADetachedMembersShareIsLentAndTakenBackByADrain() {
        CreditAllocator a = new CreditAllocator(4);
        Recorder r = new Recorder();
        CreditAllocator.Member x = join(a, "x", 4, r);
        CreditAllocator.Member y = join(a, "y", 4, r);
        a.brokerDrains(true);
        a.attached(x);
        a.attached(y);
        assertThat(r.take()).containsExactly("x+2", "y+2");
        a.detached(y, 2);
        assertThat(r.take()).as("y's share lent to x").containsExactly("x+2");
        a.attached(y);
        assertThat(r.take()).as("x holds more than its share: drained").containsExactly("x drain");
        a.drained(x, 4);
        assertThat(r.take()).containsExactlyInAnyOrder("x+2", "y+2");
        assertThat(x.outstanding() + y.outstanding()).isEqualTo(4);
    }

    @Test
    void pausingDrainsOnlyWhereTheBrokerAnswersDrainsAndGrantsNothingUntilResumed() {
        for (boolean drains : new boolean[] {true, false}) {
            CreditAllocator a = new CreditAllocator(0);
            Recorder r = new Recorder();
            CreditAllocator.Member m = join(a, "m", 4, r);
            a.brokerDrains(drains);
            a.attached(m);
            r.take();
            a.pause();
            assertThat(r.take()).isEqualTo(drains ? List.of("m drain") : List.of());
            if (drains) {
                a.drained(m, 4);
            } else {
                a.released(m, 4); // the broker used the credit; each delivery was released and finished
            }
            assertThat(r.take()).as("paused: nothing granted").isEmpty();
            a.resume();
            assertThat(r.take()).containsExactly("m+4");
        }
    }

    @Test
    void aClosingConsumerGrantsNothingMore() {
        CreditAllocator a = new CreditAllocator(10);
        Recorder r = new Recorder();
        CreditAllocator.Member x = join(a, "x", 20, r);
        CreditAllocator.Member y = join(a, "y", 20, r);
        a.attached(x);
        a.attached(y);
        r.take();
        a.stop();
        a.leave(x);
        assertThat(r.take()).as("x's share does not go to y while closing").isEmpty();
        a.released(y, 5);
        assertThat(r.take()).isEmpty();
    }

    @Test
    void aMemberPausedByTheApplicationIsDrainedGrantedNothingEvenWhenTheStorePauseEndsAndResumesAlone() {
        CreditAllocator a = new CreditAllocator(10);
        Recorder r = new Recorder();
        CreditAllocator.Member x = join(a, "x", 101, r);
        CreditAllocator.Member y = join(a, "y", 101, r);
        a.brokerDrains(true);
        a.attached(x);
        a.attached(y);
        r.take();
        assertThat(a.pause(x)).isTrue();
        assertThat(r.take()).containsExactly("x drain");
        a.drained(x, 5);
        assertThat(r.take()).as("paused: nothing granted after the drain").isEmpty();
        assertThat(x.outstanding()).isZero();

        a.pause(); // a store outage comes and goes meanwhile
        a.resume();
        assertThat(r.take()).as("the end of a store outage does not resume x").doesNotContain("x+5");

        a.resume(x);
        assertThat(r.take()).containsExactly("x+5");
    }
}
