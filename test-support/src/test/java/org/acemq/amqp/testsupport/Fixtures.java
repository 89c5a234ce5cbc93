package org.acemq.amqp.testsupport;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/** Runs a fixture test class through the JUnit Jupiter engine, so that what happens after its tests can be checked. */
final class Fixtures {

    private Fixtures() {
    }

    /**
     * @param fixture a test class using an extension under test
     * @return its test events; the failures' stack traces are printed, since assertions on the events only count them
     */
    static Events run(Class<?> fixture) {
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(fixture)).execute().testEvents();
        tests.failed().stream().forEach(e -> e.getPayload(TestExecutionResult.class)
                .flatMap(TestExecutionResult::getThrowable).ifPresent(Throwable::printStackTrace));
        return tests;
    }
}
