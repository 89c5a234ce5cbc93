package org.acemq.amqp.testkit;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;

/**
 * A deliberately simple reference model of the {@link org.acemq.amqp.api.LeasedIdempotencyStore} contract, in
 * whole seconds of model time.
 *
 * <p>Where the contract leaves a choice to the implementation, the model is <em>nondeterministic</em>: it keeps the
 * set of states the store may be in for each identifier, and every observed answer narrows that set down. An answer
 * no possible state allows is a contract violation. The choices left open are:
 * <ul>
 *   <li>when a released identifier, or one whose lease lapsed without a takeover, is forgotten: not before
 *       {@code retention} after it became idle, and possibly never (so its attempt count may restart at 1
 *       afterwards, or continue);</li>
 *   <li>whether confirming an already confirmed identifier restarts its retention;</li>
 *   <li>whether {@code renew} and {@code release(Claim)} of the owner's own lapsed but not taken-over lease act on
 *       it;</li>
 *   <li>the attempt count reported for a confirmed identifier (by {@code attempts} or in an
 *       {@code ALREADY_CONFIRMED} claim), and for {@code IN_PROGRESS} either the count or 0.</li>
 * </ul>
 * Everything else is exact: a lease is live while {@code now < grantedAt + lease}, a confirmation is remembered
 * while {@code now < confirmedAt + retention} and forgotten (attempt count and all) from then on. For a store that
 * records fingerprints, every claim reports the fingerprint its state holds: a claim records its own, confirming and
 * releasing keep it, {@code confirm(String)} of an absent identifier records none, forgetting forgets it; for a store
 * that records none, every claim reports none.
 */
final class ContractModel {

    enum Kind { ABSENT, CLAIMED, RELEASED, CONFIRMED }

    /**
     * One possible state of one identifier.
     *
     * @param deadline CLAIMED: when the lease ends; RELEASED: earliest time it may be forgotten; CONFIRMED: when it is
     *     forgotten
     */
    record State(Kind kind, int owner, int attempt, long deadline, String print) {
        static final State ABSENT = new State(Kind.ABSENT, -1, 0, 0, null);

        State(Kind kind, int owner, int attempt, long deadline) {
            this(kind, owner, attempt, deadline, null);
        }

        @Override
        public String toString() {
            switch (kind) {
                case ABSENT: return "ABSENT";
                case CLAIMED: return "CLAIMED(owner=" + owner + ", attempt=" + attempt + ", leaseUntil=" + deadline
                        + ", fingerprint=" + print + ")";
                case RELEASED: return "RELEASED(attempt=" + attempt + ", mayForgetFrom=" + deadline + ", fingerprint="
                        + print + ")";
                default: return "CONFIRMED(attempt=" + attempt + ", forgottenAt=" + deadline + ", fingerprint="
                        + print + ")";
            }
        }
    }

    /** An allowed answer and the state that follows it. */
    private record Outcome(Predicate<Object> accepts, String expected, State next) {
    }

    private final long lease;
    private final long retention;
    private final boolean records;
    private final Map<String, Set<State>> states = new HashMap<>();
    private long now;

    ContractModel(long leaseSeconds, long retentionSeconds) {
        this(leaseSeconds, retentionSeconds, false);
    }

    /**
     * @param records whether the store records fingerprints ({@code recordsFingerprints()})
     */
    ContractModel(long leaseSeconds, long retentionSeconds, boolean records) {
        this.lease = leaseSeconds;
        this.retention = retentionSeconds;
        this.records = records;
    }

    void advance(long seconds) {
        now += seconds;
    }

    long now() {
        return now;
    }

    // ---- operations: each returns a description of what was allowed when the answer fits no possible state ----

    /** acquire / tryClaim / claim: {@code answer} is the Claim, ClaimResult or Boolean the store returned. */
    void acquire(int owner, String id, Object answer, Function<Claim, Object> view) {
        acquire(owner, id, null, answer, view);
    }

    /** acquire with a fingerprint (null for none). */
    void acquire(int owner, String id, String print, Object answer, Function<Claim, Object> view) {
        String recorded = records ? print : null;
        apply(id, answer, state -> {
            List<Outcome> out = new ArrayList<>();
            switch (state.kind) {
                case ABSENT:
                    out.add(claimed(id, view, 1, new State(Kind.CLAIMED, owner, 1, now + lease, recorded)));
                    break;
                case CLAIMED:
                    if (now < state.deadline) {
                        out.add(refused(view, ClaimResult.IN_PROGRESS, state.attempt, true, state));
                    } else {
                        out.add(claimed(id, view, state.attempt + 1,
                                new State(Kind.CLAIMED, owner, state.attempt + 1, now + lease, recorded)));
                    }
                    break;
                case RELEASED:
                    out.add(claimed(id, view, state.attempt + 1,
                            new State(Kind.CLAIMED, owner, state.attempt + 1, now + lease, recorded)));
                    break;
                default:
                    out.add(refused(view, ClaimResult.ALREADY_CONFIRMED, -1, false, state));
            }
            return out;
        });
    }

    private static Outcome claimed(String id, Function<Claim, Object> view, int attempt, State next) {
        Object expected = view.apply(new Claim(id, ClaimResult.CLAIMED, attempt, next.print));
        return new Outcome(expected::equals, String.valueOf(expected), next);
    }

    private static Outcome refused(Function<Claim, Object> view, ClaimResult result, int attempt, boolean orZero,
            State next) {
        // the attempt reported with a refusal is only checked for IN_PROGRESS (count or 0), never for ALREADY_CONFIRMED
        Object plain = view.apply(new Claim("x", result, 0));
        if (!(plain instanceof Claim)) {
            return new Outcome(plain::equals, String.valueOf(plain), next);
        }
        Predicate<Object> ok = a -> a instanceof Claim
                && ((Claim) a).result() == result
                && (attempt < 0 || ((Claim) a).attempt() == attempt || (orZero && ((Claim) a).attempt() == 0))
                && java.util.Objects.equals(((Claim) a).fingerprint(), next.print);
        return new Outcome(ok, result + (attempt < 0 ? "" : " attempt " + attempt + (orZero ? " or 0" : ""))
                + " fingerprint " + next.print, next);
    }

    void confirmId(String id) {
        apply(id, null, state -> confirmed(state, a -> a == null, "nothing"));
    }

    void confirmClaim(int owner, Claim claim, boolean answer) {
        apply(claim.messageId(), answer, state -> {
            boolean held = holds(state, owner, claim) && now < state.deadline;
            return confirmed(state, Boolean.valueOf(held)::equals, String.valueOf(held));
        });
    }

    private List<Outcome> confirmed(State state, Predicate<Object> accepts, String expected) {
        List<Outcome> out = new ArrayList<>();
        State confirmed = new State(Kind.CONFIRMED, -1, state.attempt, now + retention, state.print);
        if (state.kind == Kind.CONFIRMED) {
            out.add(new Outcome(accepts, expected, state));
        }
        out.add(new Outcome(accepts, expected, confirmed));
        return out;
    }

    void releaseId(int owner, String id) {
        apply(id, null, state -> {
            Predicate<Object> none = a -> a == null;
            if (state.kind != Kind.CLAIMED || state.owner != owner) {
                return List.of(new Outcome(none, "nothing", state));
            }
            if (now < state.deadline) {
                return List.of(new Outcome(none, "nothing", released(state, now)));
            }
            return List.of(new Outcome(none, "nothing", released(state, state.deadline)),
                    new Outcome(none, "nothing", state));
        });
    }

    void releaseClaim(int owner, Claim claim, boolean answer) {
        releaseClaim(owner, claim, (Object) answer);
    }

    /** release(Claim) inside {@code releaseAll}, whose answer per claim is not observed. */
    void releaseClaimUnobserved(int owner, Claim claim) {
        releaseClaim(owner, claim, null);
    }

    private void releaseClaim(int owner, Claim claim, Object answer) {
        Predicate<Object> yes = a -> a == null || Boolean.TRUE.equals(a);
        Predicate<Object> no = a -> a == null || Boolean.FALSE.equals(a);
        apply(claim.messageId(), answer, state -> {
            if (!holds(state, owner, claim)) {
                return List.of(new Outcome(no, "false", state));
            }
            if (now < state.deadline) {
                return List.of(new Outcome(yes, "true", released(state, now)));
            }
            return List.of(new Outcome(yes, "true (lapsed, not taken over)", released(state, state.deadline)),
                    new Outcome(no, "false (lapsed, not taken over)", state));
        });
    }

    /** resetAttempts: forgets a released id or a lapsed lease; a confirmed id or a live lease stays. */
    void resetAttempts(String id, boolean answer) {
        apply(id, answer, state -> {
            switch (state.kind) {
                case RELEASED:
                    return List.of(new Outcome(Boolean.TRUE::equals, "true", State.ABSENT));
                case CLAIMED:
                    if (now >= state.deadline) {
                        return List.of(new Outcome(Boolean.TRUE::equals, "true (lapsed)", State.ABSENT));
                    }
                    return List.of(new Outcome(Boolean.FALSE::equals, "false (live lease)", state));
                default:
                    return List.of(new Outcome(Boolean.FALSE::equals, "false", state));
            }
        });
    }

    private State released(State state, long idleSince) {
        return new State(Kind.RELEASED, -1, state.attempt, idleSince + retention, state.print);
    }

    void renew(int owner, Claim claim, boolean answer) {
        apply(claim.messageId(), answer, state -> {
            if (!holds(state, owner, claim)) {
                return List.of(new Outcome(Boolean.FALSE::equals, "false", state));
            }
            State extended = new State(Kind.CLAIMED, owner, state.attempt, now + lease, state.print);
            if (now < state.deadline) {
                return List.of(new Outcome(Boolean.TRUE::equals, "true", extended));
            }
            return List.of(new Outcome(Boolean.TRUE::equals, "true (lapsed, not taken over)", extended),
                    new Outcome(Boolean.FALSE::equals, "false (lapsed, not taken over)", state));
        });
    }

    void isConfirmed(String id, boolean answer) {
        apply(id, answer, state -> {
            boolean confirmed = state.kind == Kind.CONFIRMED;
            return List.of(new Outcome(Boolean.valueOf(confirmed)::equals, String.valueOf(confirmed), state));
        });
    }

    void attempts(String id, int answer) {
        apply(id, answer, state -> {
            switch (state.kind) {
                case ABSENT:
                    return List.of(new Outcome(Integer.valueOf(0)::equals, "0", state));
                case CONFIRMED:
                    return List.of(new Outcome(a -> a instanceof Integer && (Integer) a >= 0, "any count", state));
                default:
                    return List.of(new Outcome(Integer.valueOf(state.attempt)::equals,
                            String.valueOf(state.attempt), state));
            }
        });
    }

    private static boolean holds(State state, int owner, Claim claim) {
        return state.kind == Kind.CLAIMED && state.owner == owner && state.attempt == claim.attempt();
    }

    // ---- the nondeterministic core ----

    private void apply(String id, Object answer, Function<State, List<Outcome>> step) {
        Set<State> before = possibleNow(id);
        Set<State> after = new LinkedHashSet<>();
        List<String> allowed = new ArrayList<>();
        for (State state : before) {
            for (Outcome outcome : step.apply(state)) {
                if (outcome.accepts.test(answer)) {
                    after.add(outcome.next);
                } else {
                    allowed.add(outcome.expected + " (from " + state + ")");
                }
            }
        }
        if (after.isEmpty()) {
            throw new AssertionError("at model time " + now + "s, '" + id + "' answered " + answer
                    + " but the contract allows only " + allowed);
        }
        states.put(id, after);
    }

    /** The states an identifier may be in at the current time, with forgetting applied. */
    private Set<State> possibleNow(String id) {
        Set<State> result = new LinkedHashSet<>();
        for (State state : states.getOrDefault(id, Set.of(State.ABSENT))) {
            switch (state.kind) {
                case CONFIRMED:
                    result.add(now < state.deadline ? state : State.ABSENT);
                    break;
                case RELEASED:
                    result.add(state);
                    if (now >= state.deadline) {
                        result.add(State.ABSENT);
                    }
                    break;
                case CLAIMED:
                    result.add(state);
                    if (now >= state.deadline + retention) {
                        result.add(State.ABSENT);
                    }
                    break;
                default:
                    result.add(state);
            }
        }
        return result;
    }

    String describe() {
        StringBuilder text = new StringBuilder("model at ").append(now).append("s:");
        states.forEach((id, possible) -> text.append(' ').append(id).append('=').append(possible));
        return text.toString();
    }
}
