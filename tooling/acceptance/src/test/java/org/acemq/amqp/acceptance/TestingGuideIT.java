package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

/**
 * The example tests in docs/testing.md are real tests: each {@code ```java} block that declares a test class is
 * compiled and run through the JUnit engine, against the embedded broker and the PostgreSQL the extensions provide,
 * and every test in it must pass. The Spring Boot recipe runs in the starter's build instead (see below).
 */
class TestingGuideIT {

    private static final Pattern CLASS = Pattern.compile("(?m)^class\\s+(\\w+)");

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void theExampleTestsOfTheTestingGuidePass(@TempDir Path out) throws Exception {
        List<String> ran = new ArrayList<>();
        for (Markdown.Block block : DocsSnippetsTest.javaBlocks("docs/testing.md")) {
            Matcher m = CLASS.matcher(block.text());
            if (!block.text().contains("@Test") || !m.find()) {
                continue;
            }
            if (block.text().contains("@SpringBootTest")) {
                // Spring Framework 7's SpringExtension needs JUnit Jupiter 6, this module runs on the project's 5.14:
                // DocsSnippetsTest compiles the block here, and the starter's build (on Boot's JUnit) runs it as
                // spring-boot-starter/src/test/java/PaymentsApplicationIT.java, which TestingGuideRecipeTest keeps
                // identical to the block
                continue;
            }
            Path classes = out.resolve("block" + block.line());
            JavaSnippets.Result compiled = JavaSnippets.compile(block, classes);
            assertThat(compiled.errors()).as(block.where()).isEmpty();
            try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
                    getClass().getClassLoader())) {
                Class<?> testClass = loader.loadClass(m.group(1));
                org.junit.platform.testkit.engine.EngineExecutionResults results = EngineTestKit
                        .engine("junit-jupiter").selectors(selectClass(testClass)).execute();
                Events tests = results.testEvents();
                // a class-level failure (an extension, the Spring context) fails the container, not a test
                java.util.stream.Stream.concat(results.containerEvents().failed().stream(), tests.failed().stream())
                        .forEach(e -> e.getPayload(TestExecutionResult.class)
                                .flatMap(TestExecutionResult::getThrowable).ifPresent(Throwable::printStackTrace));
                assertThat(tests.started().count()).as("%s: tests started", block.where()).isPositive();
                assertThat(tests.failed().count()).as("%s: tests failed", block.where()).isZero();
                assertThat(tests.succeeded().count()).isEqualTo(tests.started().count());
                ran.add(m.group(1) + " (" + tests.succeeded().count() + " passed)");
            }
        }
        System.out.println("docs/testing.md examples run: " + ran);
        assertThat(ran).as("example test classes in docs/testing.md").hasSizeGreaterThanOrEqualTo(2);
    }
}
