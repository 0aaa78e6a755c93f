// Types of sidebar.mjs for the TypeScript tests that import it.
export interface SidebarGroup {
  text: string
  /** Each page: its title in the sidebar and its repository path. */
  items: [string, string][]
}
export declare function sidebarGroups(): SidebarGroup[]
export declare function siteLink(page: string): string
export declare function sidebar(): { text: string; collapsed: boolean; items: { text: string; link: string }[] }[]
