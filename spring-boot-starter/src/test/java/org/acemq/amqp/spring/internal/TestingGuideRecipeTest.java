package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/testing.md's Spring Boot recipe is {@code src/test/java/PaymentsApplicationIT.java}, which failsafe runs here
 * (on the JUnit Jupiter that Boot manages; the acceptance module, on the project's JUnit 5, only compiles the block):
 * the block and the file must stay identical.
 */
class TestingGuideRecipeTest {

    private static final Pattern JAVA_BLOCK = Pattern.compile("(?s)```java\\n(.*?)```");

    @Test
    void theBootRecipeOfTheTestingGuideIsTheTestThisModuleRuns() throws IOException {
        String guide = Files.readString(Path.of("..", "docs", "testing.md"));
        Matcher m = JAVA_BLOCK.matcher(guide);
        List<String> recipes = m.results().map(r -> r.group(1)).filter(b -> b.contains("@SpringBootTest"))
                .collect(Collectors.toList());
        assertThat(recipes).as("java blocks with @SpringBootTest in docs/testing.md").hasSize(1);
        assertThat(Files.readString(Path.of("src", "test", "java", "PaymentsApplicationIT.java")))
                .as("src/test/java/PaymentsApplicationIT.java against docs/testing.md's block")
                .isEqualTo(recipes.get(0));
    }
}
