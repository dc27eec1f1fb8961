// Herald browser SDK as an ES module: import Herald from '{base_url}/sdk/herald.mjs'.
// The same code as the script tag: herald.js defines the SDK (as globalThis.Herald,
// once per page) and this module exports it.
import './herald.js'

const Herald = globalThis.Herald

export default Herald
export const init = (options) => Herald.init(options)
export const subscribe = (options) => Herald.subscribe(options)
export const unsubscribe = () => Herald.unsubscribe()
export const isSubscribed = () => Herald.isSubscribed()
export const migrate = (options) => Herald.migrate(options)
/** 'default', 'granted', 'denied' or 'unsupported', read at the time of the call. */
export const getPermission = () => Herald.permission
