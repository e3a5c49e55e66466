// Readable words for the seed's event names, in the chatbot's language (en, de).
const TEXT = {
  en: {
    starting: "Starting", getting_action: "Choosing the next step", reflecting: "Reflecting on the goal",
    reflection: "Reflection", thought: "Thought", action: "Action", observation: "Observation",
    reading: "Reading the results", adaptive: "Confident enough to answer", writing: "Writing the answer",
    max_iterations_reached: "Iteration limit reached; answering with what was found",
    final_answer: "Final answer", iteration: "Iteration", run: "Run", round: "Reflection round",
    parse_error: "The model's step could not be read; asking again",
    repeated_action: "The same action again; trying something else",
    trial: "Trial", draft: "Draft", critique: "Critique", refinement: "Refinement",
    evaluation: "Evaluation", self_reflection: "Self-reflection", memory: "Memory", error: "Error",
    checked: "Answer check", extractive: "The model's answer did not hold up: these sentences are taken from the sources.",
    from_sources: "From the sources", from_model: "From the model", dropped: "Dropped",
    thinking: "Thinking…", tools: { rag_search: "Searching the documents", lexical_search: "Searching for the exact words",
      web_search: "Searching the web", respond: "Answering" },
  },
  de: {
    starting: "Start", getting_action: "Wählt den nächsten Schritt", reflecting: "Denkt über das Ziel nach",
    reflection: "Reflexion", thought: "Gedanke", action: "Aktion", observation: "Beobachtung",
    reading: "Liest die Ergebnisse", adaptive: "Sicher genug für eine Antwort", writing: "Schreibt die Antwort",
    max_iterations_reached: "Iterationsgrenze erreicht; antwortet mit dem Gefundenen",
    final_answer: "Endgültige Antwort", iteration: "Iteration", run: "Lauf", round: "Reflexionsrunde",
    parse_error: "Der Schritt des Modells war nicht lesbar; fragt erneut",
    repeated_action: "Dieselbe Aktion noch einmal; versucht etwas anderes",
    trial: "Versuch", draft: "Entwurf", critique: "Kritik", refinement: "Überarbeitung",
    evaluation: "Bewertung", self_reflection: "Selbstreflexion", memory: "Gedächtnis", error: "Fehler",
    checked: "Antwortprüfung", extractive: "Die Antwort des Modells hielt nicht stand: diese Sätze stammen aus den Quellen.",
    from_sources: "Aus den Quellen", from_model: "Vom Modell", dropped: "Entfernt",
    thinking: "Denkt nach…", tools: { rag_search: "Durchsucht die Dokumente", lexical_search: "Sucht die genauen Wörter",
      web_search: "Sucht im Web", respond: "Antwortet" },
  },
};

export function words() {
  const lang = (document.documentElement.lang || "en").slice(0, 2);
  return TEXT[lang] || TEXT.en;
}

// What the status line says while an event is the latest one.
export function activity(event) {
  const w = words(), s = event.status;
  if (s === "action") return w.tools[event.action] || `${w.action}: ${event.action}`;
  if (s === "iteration") return `${w.iteration} ${event.iteration}`;
  if (s === "observation" || s === "observation_delta") return w.reading;
  if (s === "adaptive_iteration" || s === "adaptive_response") return w.adaptive;
  if (s === "final_answer") return w.writing;
  if (s && s.endsWith("_delta")) return w[s.replace("_delta", "")] || w.thinking;
  return w[s] || w.thinking;
}
