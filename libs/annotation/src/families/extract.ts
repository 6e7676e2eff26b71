import { textListFamily } from "./texts.js";

/** Token classification (NER): entities per input text. */
export const extractFamily = textListFamily("extract");
