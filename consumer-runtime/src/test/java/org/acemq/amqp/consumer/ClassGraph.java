package org.acemq.amqp.consumer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A dependency graph between named classes, for {@link ArchitectureTest}: each edge keeps one example of why it exists,
 * and {@link #cycles()} finds the groups of classes that depend on each other (strongly connected components).
 */
final class ClassGraph {

    /** from, to, one reason. Sorted, so that reports are stable. */
    private final Map<String, Map<String, String>> edges = new TreeMap<>();

    /** Adds an edge (the first reason given for it is kept); a class's edge to itself is ignored. */
    void add(String from, String to, String reason) {
        edges.computeIfAbsent(to, k -> new TreeMap<>());
        Map<String, String> out = edges.computeIfAbsent(from, k -> new TreeMap<>());
        if (!from.equals(to)) {
            out.putIfAbsent(to, reason);
        }
    }

    /** @return every group of two or more classes in which each class depends on every other, directly or not */
    List<List<String>> cycles() {
        List<List<String>> groups = new ArrayList<>();
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        for (String node : edges.keySet()) {
            if (!index.containsKey(node)) {
                connect(node, index, low, stack, groups);
            }
        }
        groups.sort((a, b) -> a.get(0).compareTo(b.get(0)));
        return groups;
    }

    /** Tarjan's algorithm; the graphs here are a few hundred classes, so recursion is fine. */
    private void connect(String node, Map<String, Integer> index, Map<String, Integer> low, Deque<String> stack,
                         List<List<String>> groups) {
        index.put(node, index.size());
        low.put(node, index.get(node));
        stack.push(node);
        for (String next : edges.get(node).keySet()) {
            if (!index.containsKey(next)) {
                connect(next, index, low, stack, groups);
                low.put(node, Math.min(low.get(node), low.get(next)));
            } else if (stack.contains(next)) {
                low.put(node, Math.min(low.get(node), index.get(next)));
            }
        }
        if (low.get(node).equals(index.get(node))) {
            TreeSet<String> group = new TreeSet<>();
            String member;
            do {
                member = stack.pop();
                group.add(member);
            } while (!member.equals(node));
            if (group.size() > 1) {
                groups.add(List.copyOf(group));
            }
        }
    }

    /**
     * @param groups what {@link #cycles()} found
     * @return each group with the edges between its members and one reason for each, one line per edge
     */
    String describe(List<List<String>> groups) {
        StringBuilder b = new StringBuilder();
        for (List<String> group : groups) {
            b.append("\n- ").append(group.size()).append(" classes depend on each other: ")
                    .append(String.join(", ", group));
            for (String from : group) {
                for (Map.Entry<String, String> e : edges.get(from).entrySet()) {
                    if (group.contains(e.getKey())) {
                        b.append("\n    ").append(from).append(" -> ").append(e.getKey()).append(": ")
                                .append(e.getValue());
                    }
                }
            }
        }
        return b.toString();
    }
}
