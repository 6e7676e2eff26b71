import { textListFamily } from "./texts.js";

/** Sequence classification: one label distribution per input text. */
export const classifyFamily = textListFamily("classify");
